import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Keys held in the database, each for one namespace; the secret only as its SHA-256.
  yield* sql`
    CREATE TABLE api_keys (
      id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      namespace     text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
      scope         text NOT NULL CHECK (scope IN ('app', 'admin')),
      label         text CHECK (char_length(label) <= 200),
      secret_sha256 text NOT NULL UNIQUE CHECK (secret_sha256 ~ '^[0-9a-f]{64}$'),
      prefix        text NOT NULL,
      rate_limit_per_minute integer CHECK (rate_limit_per_minute BETWEEN 1 AND 1000000),
      -- A provider and its key (sealed with KEY_ENCRYPTION_KEY) every request of the key goes with.
      upstream_provider   text CHECK (upstream_provider IN ('openai', 'anthropic')),
      upstream_key_sealed text CHECK ((upstream_provider IS NULL) = (upstream_key_sealed IS NULL)),
      expires_at    timestamptz,
      created_at    timestamptz NOT NULL DEFAULT now(),
      revoked_at    timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_namespace_idx ON api_keys (namespace, created_at DESC)`
})
