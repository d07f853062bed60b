import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // An app's own extraction (instructions, memory categories, trait schema) and retention, by namespace.
  // A namespace without a row uses the gateway's defaults. `last_sweep`: what the latest retention sweep removed.
  yield* sql`
    CREATE TABLE namespace_settings (
      namespace               text PRIMARY KEY CHECK (namespace ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
      extraction_instructions text NOT NULL DEFAULT '' CHECK (char_length(extraction_instructions) <= 4000),
      memory_categories       jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(memory_categories) = 'array'),
      trait_schema            jsonb CHECK (trait_schema IS NULL OR jsonb_typeof(trait_schema) = 'object'),
      retention               jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(retention) = 'object'),
      last_sweep              jsonb,
      updated_at              timestamptz NOT NULL DEFAULT now()
    )`
  // Memories: the app's category, what they were learned from, and when they expire (`expiry_explicit`:
  // set by a caller, so a retention policy's change leaves it alone).
  yield* sql`
    ALTER TABLE memories
      ADD COLUMN category        text CHECK (char_length(category) BETWEEN 1 AND 64),
      ADD COLUMN source          text NOT NULL DEFAULT 'text' CHECK (source IN ('text', 'image', 'file')),
      ADD COLUMN expires_at      timestamptz,
      ADD COLUMN expiry_explicit boolean NOT NULL DEFAULT false`
  yield* sql`CREATE INDEX memories_expiry_idx ON memories (expires_at) WHERE expires_at IS NOT NULL`
  yield* sql`CREATE INDEX memories_category_idx ON memories (profile_id, category) WHERE category IS NOT NULL`
  // A memory no caller gave an expiry gets its namespace's policy for its type (written or retyped); the
  // namespace's shared knowledge is the app's own, not its users': no policy expires it.
  yield* sql`
    CREATE FUNCTION memory_policy_expiry() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NOT NEW.expiry_explicit THEN
        NEW.expires_at := (
          SELECT NEW.created_at + (s.retention -> 'memoryDays' ->> NEW.type)::int * interval '1 day'
          FROM profiles p JOIN namespace_settings s ON s.namespace = p.namespace
          WHERE p.id = NEW.profile_id AND NOT p.shared);
      END IF;
      RETURN NEW;
    END $$`
  yield* sql`
    CREATE TRIGGER memories_policy_expiry BEFORE INSERT OR UPDATE OF type, expiry_explicit ON memories
      FOR EACH ROW EXECUTE FUNCTION memory_policy_expiry()`
  // The knowledge an app shares with all its users: one profile per namespace that no user id can name.
  yield* sql`ALTER TABLE profiles ADD COLUMN shared boolean NOT NULL DEFAULT false`
  yield* sql`CREATE UNIQUE INDEX profiles_shared_idx ON profiles (namespace) WHERE shared`
  // Images and files of a user's turn: held (`data` or `url`) until its extraction read them, then only
  // their digest stays. Erased with the turn and the profile.
  yield* sql`
    CREATE TABLE message_attachments (
      message_id   uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
      position     int NOT NULL,
      profile_id   uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      kind         text NOT NULL CHECK (kind IN ('image', 'file')),
      media_type   text,
      filename     text,
      url          text,
      data         bytea,
      text         text,
      bytes        int NOT NULL,
      sha256       text NOT NULL,
      extracted_at timestamptz,
      created_at   timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (message_id, position)
    )`
  yield* sql`CREATE INDEX message_attachments_profile_idx ON message_attachments (profile_id)`
  // An expired memory removed by the retention sweep (which sets gateway.expiring for its transaction)
  // is `memory.expired`, not `memory.deleted`. The memory's new fields go out with every event.
  yield* sql`
    CREATE OR REPLACE FUNCTION webhook_memory(m memories) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object('id', m.id, 'content', m.content, 'type', m.type, 'importance', m.importance,
        'tags', to_jsonb(m.tags), 'metadata', m.metadata, 'occurredAt', webhook_time(m.occurred_at),
        'supersededBy', m.superseded_by, 'createdAt', webhook_time(m.created_at), 'category', m.category,
        'source', m.source, 'expiresAt', webhook_time(m.expires_at))
    $$`
  yield* sql`
    CREATE OR REPLACE FUNCTION memory_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM queue_profile_webhook_event(NEW.profile_id, 'memory.created',
          jsonb_build_object('memory', webhook_memory(NEW)));
      ELSIF TG_OP = 'DELETE' THEN
        PERFORM queue_profile_webhook_event(OLD.profile_id,
          CASE WHEN current_setting('gateway.expiring', true) = 'on' THEN 'memory.expired' ELSE 'memory.deleted' END,
          jsonb_build_object('memory', webhook_memory(OLD)));
      ELSIF NEW.superseded_by IS NOT NULL AND OLD.superseded_by IS DISTINCT FROM NEW.superseded_by THEN
        PERFORM queue_profile_webhook_event(NEW.profile_id, 'memory.superseded',
          jsonb_build_object('memory', webhook_memory(NEW), 'supersededBy', NEW.superseded_by));
      -- A retention policy's change moves many memories' expiry at once: no event for each (gateway.quiet).
      ELSIF current_setting('gateway.quiet', true) IS DISTINCT FROM 'on' THEN
        PERFORM queue_profile_webhook_event(NEW.profile_id, 'memory.updated',
          jsonb_build_object('memory', webhook_memory(NEW), 'previous', webhook_memory(OLD)));
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`DROP TRIGGER memories_webhook_updates ON memories`
  yield* sql`
    CREATE TRIGGER memories_webhook_updates AFTER UPDATE ON memories
      FOR EACH ROW
      WHEN ((OLD.content, OLD.type, OLD.importance, OLD.tags, OLD.metadata, OLD.occurred_at, OLD.superseded_by,
             OLD.category, OLD.expires_at)
            IS DISTINCT FROM
            (NEW.content, NEW.type, NEW.importance, NEW.tags, NEW.metadata, NEW.occurred_at, NEW.superseded_by,
             NEW.category, NEW.expires_at))
      EXECUTE FUNCTION memory_webhook_events()`
  // Cached snapshots hear of a memory's new category, labels or expiry, as of its other fields (0006).
  yield* sql`DROP TRIGGER memories_changed ON memories`
  yield* sql`
    CREATE TRIGGER memories_changed AFTER UPDATE ON memories
      FOR EACH ROW
      WHEN ((OLD.content, OLD.cues, OLD.type, OLD.importance, OLD.decay_factor, OLD.reinforced_at, OLD.occurred_at,
             OLD.superseded_by, OLD.tags, OLD.metadata, OLD.category, OLD.expires_at)
            IS DISTINCT FROM
            (NEW.content, NEW.cues, NEW.type, NEW.importance, NEW.decay_factor, NEW.reinforced_at, NEW.occurred_at,
             NEW.superseded_by, NEW.tags, NEW.metadata, NEW.category, NEW.expires_at))
      EXECUTE FUNCTION notify_profile_changed()`
})
