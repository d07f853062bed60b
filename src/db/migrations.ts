import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"

/**
 * Schema migrations, in code so the service needs no files at run time. They run at every start
 * (already-applied ones are skipped; concurrent replicas serialise on the migrations table lock).
 */
export const migrations = Migrator.fromRecord({
  "0001_profiles_traits_memories_messages": Effect.gen(function* () {
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
  }),
  "0002_turns_and_extraction_jobs": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A recorded turn keeps what the proxy saw: the request it came from and any tool calls.
    yield* sql`
      ALTER TABLE messages
        ADD COLUMN request_id   text,
        ADD COLUMN model        text,
        ADD COLUMN tool_calls   jsonb,
        ADD COLUMN tool_call_id text`
    // Relevance of a memory to the latest user message (ranking at injection).
    yield* sql`CREATE INDEX memories_content_fts_idx ON memories USING gin (to_tsvector('english', content))`
    // Durable queue of extraction work; a job is written in the same transaction as its turn.
    yield* sql`
      CREATE TABLE extraction_jobs (
        id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        profile_id        uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        status            text NOT NULL DEFAULT 'pending'
                            CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
        message_ids       uuid[] NOT NULL,
        trait_definitions jsonb NOT NULL DEFAULT '[]',
        attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        run_after         timestamptz NOT NULL DEFAULT now(),
        locked_until      timestamptz,
        last_error        text,
        created_at        timestamptz NOT NULL DEFAULT now(),
        updated_at        timestamptz NOT NULL DEFAULT now()
      )`
    yield* sql`CREATE INDEX extraction_jobs_pending_idx ON extraction_jobs (run_after, created_at) WHERE status = 'pending'`
    yield* sql`CREATE INDEX extraction_jobs_profile_idx ON extraction_jobs (profile_id, created_at)`
  }),
  "0003_extraction_worker_history_decay": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Jobs: what kind of work, its input, who holds it, what it produced.
    yield* sql`
      ALTER TABLE extraction_jobs
        ADD COLUMN kind        text NOT NULL DEFAULT 'turn' CHECK (kind IN ('turn', 'ingest', 'summary')),
        ADD COLUMN input       jsonb,
        ADD COLUMN locked_by   text,
        ADD COLUMN result      jsonb,
        ADD COLUMN finished_at timestamptz`
    yield* sql`DROP INDEX extraction_jobs_pending_idx`
    // Claiming looks for the oldest active job of a profile and for due pending jobs.
    yield* sql`
      CREATE INDEX extraction_jobs_active_idx ON extraction_jobs (profile_id, created_at)
        WHERE status IN ('pending', 'running')`
    yield* sql`CREATE INDEX extraction_jobs_due_idx ON extraction_jobs (run_after) WHERE status IN ('pending', 'running')`
    yield* sql`CREATE INDEX extraction_jobs_status_idx ON extraction_jobs (status, updated_at DESC)`
    // Workers LISTEN on this channel; a slow poll covers a missed notification.
    yield* sql`
      CREATE FUNCTION notify_extraction_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('extraction_jobs', '');
        RETURN NULL;
      END $$`
    yield* sql`
      CREATE TRIGGER extraction_jobs_notify AFTER INSERT ON extraction_jobs
        FOR EACH STATEMENT EXECUTE FUNCTION notify_extraction_jobs()`

    // Every change of a trait's value, by hand or by extraction, with where it came from.
    yield* sql`
      CREATE TABLE trait_history (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        profile_id  uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        key         text NOT NULL,
        old_value   jsonb,
        new_value   jsonb,
        confidence  double precision,
        source      text NOT NULL CHECK (source IN ('manual', 'extracted')),
        job_id      uuid,
        message_ids uuid[] NOT NULL DEFAULT '{}',
        created_at  timestamptz NOT NULL DEFAULT now()
      )`
    yield* sql`CREATE INDEX trait_history_lookup_idx ON trait_history (profile_id, key, id DESC)`

    // Every summary version; the profile row holds the latest.
    yield* sql`
      CREATE TABLE summary_history (
        profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        version    integer NOT NULL,
        summary    text NOT NULL,
        source     text NOT NULL CHECK (source IN ('manual', 'extracted')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (profile_id, version)
      )`
    yield* sql`
      INSERT INTO summary_history (profile_id, version, summary, source, created_at)
      SELECT id, summary_version, summary, 'manual', coalesce(summary_updated_at, updated_at)
      FROM profiles WHERE summary IS NOT NULL AND summary_version > 0`
    // New information since the summary was written decides when it is rewritten.
    yield* sql`ALTER TABLE profiles ADD COLUMN changes_since_summary integer NOT NULL DEFAULT 0`

    // A repeated memory reinforces the stored one instead of becoming a duplicate.
    yield* sql`
      ALTER TABLE memories
        ADD COLUMN reinforced_at       timestamptz,
        ADD COLUMN reinforcement_count integer NOT NULL DEFAULT 0`
    yield* sql`CREATE INDEX memories_content_trgm_idx ON memories USING gin (content gin_trgm_ops)`
  }),
  "0004_plugin_value_types": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Plugins add trait value types: the column keeps a well-formed type name, whichever it is.
    yield* sql`ALTER TABLE traits DROP CONSTRAINT traits_value_type_check`
    yield* sql`ALTER TABLE traits ADD CONSTRAINT traits_value_type_check CHECK (value_type ~ '^[a-z][a-z0-9_-]{0,31}$')`
  }),
  "0005_profile_change_notifications": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Every gateway process caches profile snapshots and drops one when this channel names it.
    yield* sql`
      CREATE FUNCTION notify_profile_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('profile_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END).profile_id::text);
        RETURN NULL;
      END $$`
    yield* sql`
      CREATE FUNCTION notify_profile_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('profile_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END).id::text);
        RETURN NULL;
      END $$`
    yield* sql`
      CREATE TRIGGER traits_changed AFTER INSERT OR UPDATE OR DELETE ON traits
        FOR EACH ROW EXECUTE FUNCTION notify_profile_changed()`
    yield* sql`
      CREATE TRIGGER memories_added_or_removed AFTER INSERT OR DELETE ON memories
        FOR EACH ROW EXECUTE FUNCTION notify_profile_changed()`
    // Marking a memory as used is not a change worth a notification (it happens on every request).
    yield* sql`
      CREATE TRIGGER memories_changed AFTER UPDATE ON memories
        FOR EACH ROW
        WHEN ((OLD.content, OLD.type, OLD.importance, OLD.decay_factor, OLD.reinforced_at)
              IS DISTINCT FROM (NEW.content, NEW.type, NEW.importance, NEW.decay_factor, NEW.reinforced_at))
        EXECUTE FUNCTION notify_profile_changed()`
    yield* sql`
      CREATE TRIGGER profiles_changed AFTER UPDATE ON profiles
        FOR EACH ROW
        WHEN (OLD.summary IS DISTINCT FROM NEW.summary OR OLD.external_id IS DISTINCT FROM NEW.external_id)
        EXECUTE FUNCTION notify_profile_row_changed()`
    yield* sql`
      CREATE TRIGGER profiles_deleted AFTER DELETE ON profiles
        FOR EACH ROW EXECUTE FUNCTION notify_profile_row_changed()`
    // Relevance is computed from lexemes read with the snapshot; the full-text index is not used.
    yield* sql`DROP INDEX memories_content_fts_idx`
  }),
  "0006_retrieval_vectors_supersede_time": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // When the remembered thing happened (events), and which newer memory replaced this one. A
    // superseded memory is never injected; deleting its successor makes it current again.
    // Cues: the situations and topics in which a memory matters, written by the extraction model
    // (or the caller), so a message that shares no word with the memory can still find it.
    yield* sql`
      ALTER TABLE memories
        ADD COLUMN cues          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(cues) = 'array'),
        ADD COLUMN occurred_at   timestamptz,
        ADD COLUMN superseded_by uuid REFERENCES memories (id) ON DELETE SET NULL,
        ADD CONSTRAINT memories_not_self_superseded CHECK (superseded_by IS DISTINCT FROM id)`
    yield* sql`CREATE INDEX memories_superseded_by_idx ON memories (superseded_by) WHERE superseded_by IS NOT NULL`
    // One embedding per memory: int8 components (value = byte / scale of a unit vector), for the
    // model named and the text (content and cues) whose md5 is kept (an edited memory no longer
    // matches and is embedded again). bytea decodes fast; real[] goes through text.
    yield* sql`
      CREATE TABLE memory_vectors (
        memory_id    uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
        profile_id   uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        model        text NOT NULL,
        dimensions   integer NOT NULL CHECK (dimensions > 0),
        content_hash text NOT NULL,
        scale        double precision NOT NULL CHECK (scale > 0),
        vector       bytea NOT NULL CHECK (length(vector) = dimensions),
        created_at   timestamptz NOT NULL DEFAULT now()
      )`
    yield* sql`CREATE INDEX memory_vectors_profile_idx ON memory_vectors (profile_id, model)`
    yield* sql`
      CREATE TRIGGER memory_vectors_changed AFTER INSERT OR UPDATE OR DELETE ON memory_vectors
        FOR EACH ROW EXECUTE FUNCTION notify_profile_changed()`
    // Superseding and the time of an event change what is injected: cached profiles must hear of it.
    yield* sql`DROP TRIGGER memories_changed ON memories`
    yield* sql`
      CREATE TRIGGER memories_changed AFTER UPDATE ON memories
        FOR EACH ROW
        WHEN ((OLD.content, OLD.cues, OLD.type, OLD.importance, OLD.decay_factor, OLD.reinforced_at, OLD.occurred_at,
               OLD.superseded_by)
              IS DISTINCT FROM
              (NEW.content, NEW.cues, NEW.type, NEW.importance, NEW.decay_factor, NEW.reinforced_at, NEW.occurred_at,
               NEW.superseded_by))
        EXECUTE FUNCTION notify_profile_changed()`
    // Repeats are now found in the process (spelling, meaning and names together), not by an index.
    yield* sql`DROP INDEX memories_content_trgm_idx`
    // Embedding memories is queued work too; it does not wait behind a profile's extraction jobs.
    yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
    yield* sql`
      ALTER TABLE extraction_jobs ADD CONSTRAINT extraction_jobs_kind_check
        CHECK (kind IN ('turn', 'ingest', 'summary', 'embed'))`
  }),
  "0007_extraction_budget": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A claim counts the jobs the candidate's profile ran in the last hour (its extraction budget):
    // newest first, only those a worker took, so it reads no more than the budget's worth of entries.
    yield* sql`
      CREATE INDEX extraction_jobs_budget_idx ON extraction_jobs (profile_id, updated_at DESC)
        WHERE kind <> 'embed' AND attempts > 0`
  }),
  "0008_job_notifications_name_kinds": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The notification names the kinds inserted, so only the loops that take them wake up (a turn's
    // extraction job does not make the embedding loop query the queue).
    yield* sql`
      CREATE OR REPLACE FUNCTION notify_extraction_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('extraction_jobs', (SELECT string_agg(DISTINCT kind, ',') FROM inserted));
        RETURN NULL;
      END $$`
    yield* sql`DROP TRIGGER extraction_jobs_notify ON extraction_jobs`
    yield* sql`
      CREATE TRIGGER extraction_jobs_notify AFTER INSERT ON extraction_jobs
        REFERENCING NEW TABLE AS inserted
        FOR EACH STATEMENT EXECUTE FUNCTION notify_extraction_jobs()`
  }),
  "0009_cues_written_in_the_background": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A memory written without cues (through the API or MCP) gets them from the extraction model
    // in a `cues` job; the flag marks those still waiting, so a job reads only them.
    yield* sql`ALTER TABLE memories ADD COLUMN cues_wanted boolean NOT NULL DEFAULT false`
    yield* sql`CREATE INDEX memories_cues_wanted_idx ON memories (profile_id) WHERE cues_wanted`
    yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
    yield* sql`
      ALTER TABLE extraction_jobs ADD CONSTRAINT extraction_jobs_kind_check
        CHECK (kind IN ('turn', 'ingest', 'summary', 'embed', 'cues'))`
  }),
  "0010_namespaces": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Every profile belongs to one namespace (an app); existing ones to `default`. A user id is
    // unique within its namespace. Reverting (docs/auth.md) needs the user ids unique again.
    yield* sql`
      ALTER TABLE profiles ADD COLUMN namespace text NOT NULL DEFAULT 'default'
        CHECK (namespace ~ '^[a-z0-9][a-z0-9_-]{0,62}$')`
    yield* sql`ALTER TABLE profiles DROP CONSTRAINT profiles_external_id_key`
    yield* sql`ALTER TABLE profiles ADD CONSTRAINT profiles_namespace_external_id_key UNIQUE (namespace, external_id)`
    yield* sql`CREATE INDEX profiles_namespace_listing_idx ON profiles (namespace, created_at DESC, id DESC)`
  }),
  "0011_api_keys": Effect.gen(function* () {
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
  }),
  "0012_memory_tags_metadata": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // An app's own labels on a memory (e.g. work / personal), to filter what is injected and searched.
    yield* sql`ALTER TABLE memories ADD COLUMN tags text[] NOT NULL DEFAULT '{}'`
    yield* sql`
      ALTER TABLE memories ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(metadata) = 'object')`
  }),
  "0013_webhooks": Effect.gen(function* () {
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
  }),
  "0014_stored_responses": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Responses API state the gateway keeps for providers that keep none (Anthropic through the
    // translation): each response with its own input items, so `previous_response_id` rebuilds the
    // conversation. Part of the profile: exported with it, erased with it.
    yield* sql`
      CREATE TABLE stored_responses (
        id                   text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 200),
        profile_id           uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        previous_response_id text,
        input_items          jsonb NOT NULL CHECK (jsonb_typeof(input_items) = 'array'),
        response             jsonb NOT NULL CHECK (jsonb_typeof(response) = 'object'),
        created_at           timestamptz NOT NULL DEFAULT now()
      )`
    yield* sql`CREATE INDEX stored_responses_profile_idx ON stored_responses (profile_id, created_at)`
  }),
  "0015_conversations": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The Conversations API, where the gateway keeps the state: a user's conversation and its items in
    // order (an item already there, by id, is not added twice). Part of the profile, like its responses.
    yield* sql`
      CREATE TABLE conversations (
        id         text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 200),
        profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        metadata   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
        created_at timestamptz NOT NULL DEFAULT now()
      )`
    yield* sql`CREATE INDEX conversations_profile_idx ON conversations (profile_id, created_at)`
    yield* sql`
      CREATE TABLE conversation_items (
        conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        id              text NOT NULL CHECK (char_length(id) BETWEEN 1 AND 200),
        position        bigserial,
        item            jsonb NOT NULL CHECK (jsonb_typeof(item) = 'object'),
        created_at      timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_id, id)
      )`
    yield* sql`CREATE INDEX conversation_items_order_idx ON conversation_items (conversation_id, position)`
  }),
  "0016_threads": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A chat turn may belong to a thread the gateway keeps (X-Service-Thread-Id): its messages restore
    // the thread's history for a client that sends only its new messages.
    yield* sql`ALTER TABLE messages ADD COLUMN thread_id text CHECK (char_length(thread_id) BETWEEN 1 AND 200)`
    yield* sql`
      CREATE INDEX messages_thread_idx ON messages (profile_id, thread_id, created_at DESC, id DESC)
        WHERE thread_id IS NOT NULL`
  }),
  "0017_thread_summaries": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A thread's rolling summary: its turns up to summarized_until, in a few paragraphs, written by a
    // `thread` job of the extraction worker when turns no longer fit the restore budget.
    yield* sql`
      CREATE TABLE thread_summaries (
        profile_id       uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
        thread_id        text NOT NULL,
        summary          text NOT NULL CHECK (char_length(summary) <= 20000),
        summarized_until timestamptz NOT NULL,
        updated_at       timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (profile_id, thread_id)
      )`
    yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
    yield* sql`
      ALTER TABLE extraction_jobs ADD CONSTRAINT extraction_jobs_kind_check
        CHECK (kind IN ('turn', 'ingest', 'summary', 'embed', 'cues', 'webhook', 'thread'))`
  }),
  "0018_answer_ids": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The id an answer had for the client (the provider's, or the gateway's for a response it keeps):
    // a response id of the Responses API, kept by the provider, is found with its recorded turn.
    yield* sql`ALTER TABLE messages ADD COLUMN answer_id text CHECK (char_length(answer_id) BETWEEN 1 AND 200)`
  }),
  "0019_state_per_profile": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A provider's response id is unique per user, not across the database: a provider that reuses an
    // id (or two users whose providers coincide) must not lose one user's response to another's.
    yield* sql`ALTER TABLE stored_responses DROP CONSTRAINT stored_responses_pkey`
    yield* sql`ALTER TABLE stored_responses ADD PRIMARY KEY (profile_id, id)`
    // What each conversation holds, in bytes of its items and metadata: the per-user limit reads it.
    yield* sql`ALTER TABLE conversations ADD COLUMN size_bytes bigint NOT NULL DEFAULT 0`
    yield* sql`
      UPDATE conversations c SET size_bytes = octet_length(c.metadata::text) + coalesce(
        (SELECT sum(octet_length(i.item::text)) FROM conversation_items i WHERE i.conversation_id = c.id), 0)`
  }),
  "0020_api_key_creators": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The key held in the database that created a key (NULL: the environment's admin key): a key never
    // outgrows its creator, and revoking a key revokes the keys it created. Keys are never deleted.
    yield* sql`ALTER TABLE api_keys ADD COLUMN created_by uuid REFERENCES api_keys (id)`
    yield* sql`CREATE INDEX api_keys_created_by_idx ON api_keys (created_by) WHERE created_by IS NOT NULL`
  }),
  "0022_job_key": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The key held in the database, bound to a provider key, whose request made a turn: the turn's
    // extraction goes with that provider key. No foreign key: a job keeps naming a key whose row is
    // gone, and then fails rather than fall back to the operator's key (docs/learning.md).
    yield* sql`ALTER TABLE extraction_jobs ADD COLUMN key_id uuid`
  }),
  "0023_context_blocks": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The context a turn's request got at the end of its conversation, kept with the turn's answer by
    // the hash of the items before it: the next turn puts it back where it was, so the provider's cache
    // serves it too. Written in the turn's own statement; erased with the turn.
    yield* sql`
      ALTER TABLE messages
        ADD COLUMN context_hash  text CHECK (context_hash ~ '^[0-9a-f]{64}$'),
        ADD COLUMN context_block text,
        ADD COLUMN context_chain text[]`
    yield* sql`
      CREATE INDEX messages_context_idx ON messages (profile_id, context_hash) WHERE context_hash IS NOT NULL`
    // When a profile loses a memory or a trait, the context kept from before may hold what was deleted:
    // it is cleared, and `forgotten_at` tells replicas to drop what they hold in memory.
    yield* sql`ALTER TABLE profiles ADD COLUMN forgotten_at timestamptz`
    yield* sql`
      CREATE FUNCTION note_profile_forgetting() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE profiles SET forgotten_at = now() WHERE id IN (SELECT DISTINCT profile_id FROM gone);
        UPDATE messages SET context_hash = NULL, context_block = NULL, context_chain = NULL
          WHERE profile_id IN (SELECT DISTINCT profile_id FROM gone) AND context_hash IS NOT NULL;
        RETURN NULL;
      END $$`
    yield* sql`
      CREATE TRIGGER memories_forgotten AFTER DELETE ON memories REFERENCING OLD TABLE AS gone
        FOR EACH STATEMENT EXECUTE FUNCTION note_profile_forgetting()`
    yield* sql`
      CREATE TRIGGER traits_forgotten AFTER DELETE ON traits REFERENCING OLD TABLE AS gone
        FOR EACH STATEMENT EXECUTE FUNCTION note_profile_forgetting()`
  }),
  "0024_context_forgetting": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A count instead of a time: a kept block goes back only when the profile's `forgetting` is the one
    // it was rendered under, so no clock (the database's or a replica's) decides what may hold a deleted
    // memory. A memory's text changing counts too: the old text may be what the user wanted gone.
    yield* sql`ALTER TABLE messages ADD COLUMN context_forgetting int`
    yield* sql`ALTER TABLE profiles ADD COLUMN forgetting int NOT NULL DEFAULT 0`
    // Blocks kept before this have no count and would never go back: cleared.
    yield* sql`
      UPDATE messages SET context_hash = NULL, context_block = NULL, context_chain = NULL
      WHERE context_hash IS NOT NULL`
    // `forgotten_at` is still set for replicas of the previous version during a rolling update.
    yield* sql`
      CREATE FUNCTION forget_kept_context(profile_ids uuid[]) RETURNS void LANGUAGE sql AS $$
        UPDATE profiles SET forgetting = forgetting + 1, forgotten_at = now() WHERE id = ANY(profile_ids);
        UPDATE messages SET context_hash = NULL, context_block = NULL, context_chain = NULL, context_forgetting = NULL
          WHERE profile_id = ANY(profile_ids) AND context_hash IS NOT NULL;
      $$`
    yield* sql`
      CREATE OR REPLACE FUNCTION note_profile_forgetting() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM forget_kept_context(ARRAY(SELECT DISTINCT profile_id FROM gone));
        RETURN NULL;
      END $$`
    yield* sql`
      CREATE FUNCTION note_memory_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM forget_kept_context(ARRAY[NEW.profile_id]);
        RETURN NULL;
      END $$`
    yield* sql`
      CREATE TRIGGER memories_rewritten AFTER UPDATE OF content ON memories
        FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
        EXECUTE FUNCTION note_memory_rewritten()`
  }),
  "0025_state_as_sent": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Kept Responses state goes back to the provider on the next turn: `json` keeps its text as it was
    // sent (jsonb reorders keys), so the provider sees the bytes it has cached.
    yield* sql`
      ALTER TABLE stored_responses
        DROP CONSTRAINT stored_responses_input_items_check,
        DROP CONSTRAINT stored_responses_response_check,
        ALTER COLUMN input_items TYPE json,
        ALTER COLUMN response TYPE json,
        ADD CHECK (json_typeof(input_items) = 'array'),
        ADD CHECK (json_typeof(response) = 'object')`
    yield* sql`
      ALTER TABLE conversation_items
        DROP CONSTRAINT conversation_items_item_check,
        ALTER COLUMN item TYPE json,
        ADD CHECK (json_typeof(item) = 'object')`
  })
})

export const runMigrations = Migrator.make({})({ loader: migrations })
