import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Trigram index for case-insensitive substring search over external ids.
  yield* sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`
  yield* sql`
    CREATE TABLE profiles (
      id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      external_id        text NOT NULL UNIQUE CHECK (char_length(external_id) BETWEEN 1 AND 256),
      summary            text CHECK (char_length(summary) <= 20000),
      summary_version    integer NOT NULL DEFAULT 0 CHECK (summary_version >= 0),
      summary_updated_at timestamptz,
      created_at         timestamptz NOT NULL DEFAULT now(),
      updated_at         timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX profiles_listing_idx ON profiles (created_at DESC, id DESC)`
  yield* sql`CREATE INDEX profiles_external_id_trgm_idx ON profiles USING gin (external_id gin_trgm_ops)`
  yield* sql`
    CREATE TABLE traits (
      id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      profile_id         uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      key                text NOT NULL CHECK (key ~ '^[A-Za-z][A-Za-z0-9_.-]{0,63}$'),
      value              jsonb NOT NULL,
      value_type         text NOT NULL
                           CHECK (value_type IN ('string', 'number', 'boolean', 'enum', 'array', 'object')),
      category           text NOT NULL,
      confidence         double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
      source             text NOT NULL CHECK (source IN ('manual', 'extracted')),
      source_message_ids uuid[] NOT NULL DEFAULT '{}',
      created_at         timestamptz NOT NULL DEFAULT now(),
      updated_at         timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, key)
    )`
  yield* sql`
    CREATE TABLE memories (
      id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      profile_id         uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      content            text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 4000),
      type               text NOT NULL CHECK (type IN ('fact', 'preference', 'event', 'context')),
      importance         double precision NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
      decay_factor       double precision NOT NULL DEFAULT 1 CHECK (decay_factor BETWEEN 0 AND 1),
      source_message_ids uuid[] NOT NULL DEFAULT '{}',
      created_at         timestamptz NOT NULL DEFAULT now(),
      last_accessed_at   timestamptz
    )`
  // The listing order (importance × decay, then recency), with and without a type filter.
  yield* sql`
    CREATE INDEX memories_ranking_idx
      ON memories (profile_id, (importance * decay_factor) DESC, created_at DESC)`
  yield* sql`
    CREATE INDEX memories_type_ranking_idx
      ON memories (profile_id, type, (importance * decay_factor) DESC, created_at DESC)`
  yield* sql`CREATE INDEX memories_recent_idx ON memories (profile_id, created_at DESC)`
  yield* sql`
    CREATE TABLE messages (
      id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      role       text NOT NULL CHECK (role IN ('system', 'developer', 'user', 'assistant', 'tool')),
      content    text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX messages_profile_idx ON messages (profile_id, created_at, id)`
})
