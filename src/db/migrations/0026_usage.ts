import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Every provider call's tokens as the provider reported them: the app's requests and the gateway's
  // own memory work. Kept `USAGE_RETENTION_DAYS`; '' stands for "none" (the environment's key, no
  // user) so that the daily rows' key can hold it.
  yield* sql`
    CREATE TABLE usage_events (
      id                  uuid PRIMARY KEY,
      at                  timestamptz NOT NULL,
      namespace           text NOT NULL,
      key_id              text NOT NULL,
      user_id             text NOT NULL,
      profile_id          uuid,
      work                text NOT NULL CHECK (work IN ('app', 'extraction', 'summary', 'cues', 'thread_summary', 'embedding')),
      provider            text NOT NULL,
      api                 text NOT NULL,
      model               text NOT NULL,
      reported            boolean NOT NULL,
      input_tokens        bigint NOT NULL CHECK (input_tokens >= 0),
      cached_input_tokens bigint NOT NULL CHECK (cached_input_tokens >= 0),
      cache_write_tokens  bigint NOT NULL CHECK (cache_write_tokens >= 0),
      output_tokens       bigint NOT NULL CHECK (output_tokens >= 0),
      reasoning_tokens    bigint NOT NULL CHECK (reasoning_tokens >= 0),
      injected_tokens     bigint NOT NULL CHECK (injected_tokens >= 0)
    )`
  yield* sql`CREATE INDEX usage_events_at_idx ON usage_events (at)`
  // The same, summed per UTC day: what every usage read and budget is answered from (a month of a busy
  // namespace is a few thousand rows, whatever its traffic). Kept for good.
  yield* sql`
    CREATE TABLE usage_daily (
      day                 date NOT NULL,
      namespace           text NOT NULL,
      key_id              text NOT NULL,
      user_id             text NOT NULL,
      work                text NOT NULL,
      provider            text NOT NULL,
      model               text NOT NULL,
      requests            bigint NOT NULL,
      unreported          bigint NOT NULL,
      input_tokens        bigint NOT NULL,
      cached_input_tokens bigint NOT NULL,
      cache_write_tokens  bigint NOT NULL,
      output_tokens       bigint NOT NULL,
      reasoning_tokens    bigint NOT NULL,
      injected_tokens     bigint NOT NULL,
      last_at             timestamptz NOT NULL,
      PRIMARY KEY (namespace, day, key_id, user_id, work, provider, model)
    )`
  yield* sql`CREATE INDEX usage_daily_key_idx ON usage_daily (key_id, day) WHERE key_id <> ''`
  yield* sql`CREATE INDEX usage_daily_user_idx ON usage_daily (namespace, user_id, day)`
})
