import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A namespace's subscriptions. The signing secret is sealed with KEY_ENCRYPTION_KEY when the
  // gateway has one (secret_sealed), kept as written otherwise: it must be read back to sign.
  yield* sql`
    CREATE TABLE webhooks (
      id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      namespace     text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
      url           text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2000),
      events        text[] NOT NULL CHECK (cardinality(events) > 0),
      description   text CHECK (char_length(description) <= 500),
      secret        text NOT NULL,
      secret_sealed boolean NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX webhooks_namespace_idx ON webhooks (namespace, created_at DESC)`
  // A delivery is a job of the durable queue (leases, retries, /api/jobs), of its own line: one
  // webhook's events about one profile (subject_id), in the order they happened (event_seq). It
  // names no profile row, so the event of an erasure outlives the profile it is about.
  yield* sql`CREATE SEQUENCE webhook_event_seq`
  yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
  yield* sql`
    ALTER TABLE extraction_jobs
      ALTER COLUMN profile_id DROP NOT NULL,
      ADD COLUMN webhook_id uuid REFERENCES webhooks (id) ON DELETE CASCADE,
      ADD COLUMN subject_id uuid,
      ADD COLUMN event_seq  bigint,
      ADD CONSTRAINT extraction_jobs_kind_check
        CHECK (kind IN ('turn', 'ingest', 'summary', 'embed', 'cues', 'webhook')),
      ADD CONSTRAINT extraction_jobs_owner_check CHECK (CASE WHEN kind = 'webhook'
        THEN profile_id IS NULL AND webhook_id IS NOT NULL AND subject_id IS NOT NULL AND event_seq IS NOT NULL
        ELSE profile_id IS NOT NULL AND webhook_id IS NULL END)`
  yield* sql`
    CREATE INDEX extraction_jobs_webhook_line_idx ON extraction_jobs (webhook_id, subject_id, event_seq)
      WHERE kind = 'webhook' AND status IN ('pending', 'running')`
  yield* sql`
    CREATE INDEX extraction_jobs_deliveries_idx ON extraction_jobs (webhook_id, created_at DESC) WHERE kind = 'webhook'`
  yield* sql`CREATE INDEX extraction_jobs_subject_idx ON extraction_jobs (subject_id) WHERE kind = 'webhook'`

  // Events are queued by triggers, in the transaction of the change: an event exists exactly when
  // its change was committed, whichever code path (worker, API, MCP, import) made it.
  yield* sql`
    CREATE FUNCTION webhook_time(t timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
      SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    $$`
  yield* sql`
    CREATE FUNCTION queue_webhook_event(ns text, subject uuid, external_id text, event_type text, data jsonb)
      RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      event_id uuid := gen_random_uuid();
      happened text := webhook_time(clock_timestamp());
    BEGIN
      -- Nobody subscribed: no insert (an empty one would still wake every worker loop).
      IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.namespace = ns AND event_type = ANY (w.events)) THEN
        RETURN;
      END IF;
      INSERT INTO extraction_jobs (kind, webhook_id, subject_id, event_seq, message_ids, input)
      SELECT 'webhook', w.id, subject, nextval('webhook_event_seq'), '{}', jsonb_build_object(
               'id', event_id, 'type', event_type, 'createdAt', happened, 'namespace', ns,
               'profile', jsonb_build_object('id', subject, 'externalId', external_id), 'data', data)
      FROM webhooks w
      WHERE w.namespace = ns AND event_type = ANY (w.events);
    END $$`
  // About a profile that still exists (a memory deleted by its profile's erasure is no event of its own).
  yield* sql`
    CREATE FUNCTION queue_profile_webhook_event(subject uuid, event_type text, data jsonb)
      RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      owner record;
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM webhooks) THEN RETURN; END IF;
      SELECT namespace, external_id INTO owner FROM profiles WHERE id = subject;
      IF FOUND THEN
        PERFORM queue_webhook_event(owner.namespace, subject, owner.external_id, event_type, data);
      END IF;
    END $$`
  yield* sql`
    CREATE FUNCTION webhook_memory(m memories) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object('id', m.id, 'content', m.content, 'type', m.type, 'importance', m.importance,
        'tags', to_jsonb(m.tags), 'metadata', m.metadata, 'occurredAt', webhook_time(m.occurred_at),
        'supersededBy', m.superseded_by, 'createdAt', webhook_time(m.created_at))
    $$`
  yield* sql`
    CREATE FUNCTION memory_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM queue_profile_webhook_event(NEW.profile_id, 'memory.created',
          jsonb_build_object('memory', webhook_memory(NEW)));
      ELSIF TG_OP = 'DELETE' THEN
        PERFORM queue_profile_webhook_event(OLD.profile_id, 'memory.deleted',
          jsonb_build_object('memory', webhook_memory(OLD)));
      ELSIF NEW.superseded_by IS NOT NULL AND OLD.superseded_by IS DISTINCT FROM NEW.superseded_by THEN
        PERFORM queue_profile_webhook_event(NEW.profile_id, 'memory.superseded',
          jsonb_build_object('memory', webhook_memory(NEW), 'supersededBy', NEW.superseded_by));
      ELSE
        PERFORM queue_profile_webhook_event(NEW.profile_id, 'memory.updated',
          jsonb_build_object('memory', webhook_memory(NEW), 'previous', webhook_memory(OLD)));
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER memories_webhook_events AFTER INSERT OR DELETE ON memories
      FOR EACH ROW EXECUTE FUNCTION memory_webhook_events()`
  // Not when a memory is only used, decayed or reinforced (that happens all the time).
  yield* sql`
    CREATE TRIGGER memories_webhook_updates AFTER UPDATE ON memories
      FOR EACH ROW
      WHEN ((OLD.content, OLD.type, OLD.importance, OLD.tags, OLD.metadata, OLD.occurred_at, OLD.superseded_by)
            IS DISTINCT FROM
            (NEW.content, NEW.type, NEW.importance, NEW.tags, NEW.metadata, NEW.occurred_at, NEW.superseded_by))
      EXECUTE FUNCTION memory_webhook_events()`
  yield* sql`
    CREATE FUNCTION webhook_trait(t traits) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT jsonb_build_object('key', t.key, 'value', t.value, 'valueType', t.value_type, 'category', t.category,
        'confidence', t.confidence, 'source', t.source, 'updatedAt', webhook_time(t.updated_at))
    $$`
  yield* sql`
    CREATE FUNCTION trait_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM queue_profile_webhook_event(
        CASE WHEN TG_OP = 'DELETE' THEN OLD.profile_id ELSE NEW.profile_id END,
        'trait.changed',
        jsonb_build_object(
          'key', CASE WHEN TG_OP = 'DELETE' THEN OLD.key ELSE NEW.key END,
          'trait', CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE webhook_trait(NEW) END,
          'previous', CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE webhook_trait(OLD) END));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER traits_webhook_events AFTER INSERT OR DELETE ON traits
      FOR EACH ROW EXECUTE FUNCTION trait_webhook_events()`
  yield* sql`
    CREATE TRIGGER traits_webhook_updates AFTER UPDATE ON traits
      FOR EACH ROW
      WHEN ((OLD.key, OLD.value, OLD.value_type, OLD.category) IS DISTINCT FROM (NEW.key, NEW.value, NEW.value_type, NEW.category))
      EXECUTE FUNCTION trait_webhook_events()`
  yield* sql`
    CREATE FUNCTION profile_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        -- Erased: the deliveries still carrying the profile's data go with it.
        DELETE FROM extraction_jobs WHERE kind = 'webhook' AND subject_id = OLD.id;
        PERFORM queue_webhook_event(OLD.namespace, OLD.id, OLD.external_id, 'profile.erased', '{}'::jsonb);
      ELSE
        PERFORM queue_webhook_event(NEW.namespace, NEW.id, NEW.external_id, 'summary.updated',
          jsonb_build_object('summary', jsonb_build_object('text', NEW.summary, 'version', NEW.summary_version)));
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER profiles_webhook_erased AFTER DELETE ON profiles
      FOR EACH ROW EXECUTE FUNCTION profile_webhook_events()`
  yield* sql`
    CREATE TRIGGER profiles_webhook_summary AFTER UPDATE ON profiles
      FOR EACH ROW WHEN (OLD.summary IS DISTINCT FROM NEW.summary)
      EXECUTE FUNCTION profile_webhook_events()`
  yield* sql`
    CREATE FUNCTION job_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM queue_profile_webhook_event(NEW.profile_id, 'extraction.failed', jsonb_build_object('job',
        jsonb_build_object('id', NEW.id, 'kind', NEW.kind, 'attempts', NEW.attempts, 'error', NEW.last_error)));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER extraction_jobs_webhook_failed AFTER UPDATE ON extraction_jobs
      FOR EACH ROW WHEN (NEW.status = 'failed' AND OLD.status <> 'failed' AND NEW.kind <> 'webhook')
      EXECUTE FUNCTION job_webhook_events()`
})
