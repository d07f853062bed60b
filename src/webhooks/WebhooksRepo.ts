import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import type { JobStatus } from "../domain/Job.ts"
import type { NamespaceScope } from "../domain/Namespace.ts"
import { Webhook, WebhookDelivery, type WebhookEventType } from "./Webhook.ts"

export interface NewWebhook {
  readonly namespace: string
  readonly url: string
  readonly events: ReadonlyArray<WebhookEventType>
  readonly description: string | null
  readonly secret: string
  readonly secretSealed: boolean
}

/** What an edit changes (`undefined`: left as it is; a `null` description clears it). */
export interface WebhookChanges {
  readonly url: string | undefined
  readonly events: ReadonlyArray<WebhookEventType> | undefined
  readonly description: string | null | undefined
  readonly secret: { readonly value: string; readonly sealed: boolean } | undefined
}

/** Where a delivery goes and what signs it. */
export const WebhookTarget = Schema.Struct({ url: Schema.String, secret: Schema.String, secretSealed: Schema.Boolean })
export type WebhookTarget = typeof WebhookTarget.Type

/**
 * The SQL of webhooks and of their deliveries (jobs of kind `webhook`). Every statement a request
 * makes is scoped by the caller's namespace; `target` is read by the delivering worker, by id.
 */
export class WebhooksRepo extends Context.Service<
  WebhooksRepo,
  {
    readonly insert: (webhook: NewWebhook) => Effect.Effect<Webhook>
    readonly list: (scope: NamespaceScope) => Effect.Effect<ReadonlyArray<Webhook>>
    readonly find: (id: string, scope: NamespaceScope) => Effect.Effect<Option.Option<Webhook>>
    /**
     * Changes the webhook in one statement. Events are queued by reading the webhooks table (migration
     * 0013), and deliveries read their target when they are sent: both follow the change from its commit.
     */
    readonly update: (
      id: string,
      scope: NamespaceScope,
      changes: WebhookChanges
    ) => Effect.Effect<Option.Option<Webhook>>
    /** Deletes the webhook and its deliveries, pending ones included. */
    readonly remove: (id: string, scope: NamespaceScope) => Effect.Effect<Option.Option<Webhook>>
    readonly target: (id: string) => Effect.Effect<Option.Option<WebhookTarget>>
    /** Newest first. */
    readonly deliveries: (
      webhookId: string,
      scope: NamespaceScope,
      status: JobStatus | undefined,
      limit: number
    ) => Effect.Effect<ReadonlyArray<WebhookDelivery>>
    readonly delivery: (
      webhookId: string,
      deliveryId: string,
      scope: NamespaceScope
    ) => Effect.Effect<Option.Option<WebhookDelivery>>
    /**
     * A finished delivery's event queued again for the same webhook (the same event id, so receivers
     * still recognise it), behind the profile's other deliveries; `None` unless it had finished.
     */
    readonly replay: (
      webhookId: string,
      deliveryId: string,
      scope: NamespaceScope
    ) => Effect.Effect<Option.Option<WebhookDelivery>>
  }
>()("gateway/webhooks/WebhooksRepo") {
  static readonly layer = Layer.effect(
    WebhooksRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const within = (scope: NamespaceScope) => (scope._tag === "One" ? sql`w.namespace = ${scope.name}` : sql`true`)
      const columns = sql`w.id::text AS id, w.namespace, w.url, w.events, w.description, w.created_at`
      const webhooks = decodeRows(Webhook)
      const deliveryRows = decodeRows(WebhookDelivery)
      const deliveryColumns = sql`
        j.id::text AS id, j.webhook_id::text AS webhook_id, j.input->>'id' AS event_id, j.input->>'type' AS type,
        j.input->'profile' AS profile, j.status, j.attempts, j.last_error,
        coalesce((j.result->>'status')::int, substring(j.last_error FROM '^HTTP (\\d{3})')::int) AS response_status,
        j.run_after, j.created_at, j.updated_at, j.finished_at`
      const first = <A>(rows: ReadonlyArray<A>) => Option.fromUndefinedOr(rows[0])

      return WebhooksRepo.of({
        insert: (webhook) =>
          sql`
            INSERT INTO webhooks AS w (namespace, url, events, description, secret, secret_sealed)
            VALUES (${webhook.namespace}, ${webhook.url}, ARRAY(SELECT jsonb_array_elements_text(${sql.json(webhook.events)})),
                    ${webhook.description},
                    ${webhook.secret}, ${webhook.secretSealed})
            RETURNING ${columns}`.pipe(
            webhooks,
            Effect.orDie,
            Effect.map((rows) => rows[0]!)
          ),
        list: (scope) =>
          sql`SELECT ${columns} FROM webhooks w WHERE ${within(scope)} ORDER BY w.created_at DESC, w.id`.pipe(
            webhooks,
            Effect.orDie
          ),
        find: (id, scope) =>
          sql`SELECT ${columns} FROM webhooks w WHERE w.id = ${id}::uuid AND ${within(scope)}`.pipe(
            webhooks,
            Effect.orDie,
            Effect.map(first)
          ),
        update: (id, scope, changes) => {
          // Each column is the new value or, left out of the edit, the row's own.
          const url = changes.url ?? sql`w.url`
          const events =
            changes.events === undefined
              ? sql`w.events`
              : sql`ARRAY(SELECT jsonb_array_elements_text(${sql.json(changes.events)}))`
          const description = changes.description === undefined ? sql`w.description` : changes.description
          const secret = changes.secret?.value ?? sql`w.secret`
          const secretSealed = changes.secret?.sealed ?? sql`w.secret_sealed`
          return sql`
            UPDATE webhooks AS w
            SET url = ${url}, events = ${events}, description = ${description}, secret = ${secret},
                secret_sealed = ${secretSealed}
            WHERE w.id = ${id}::uuid AND ${within(scope)}
            RETURNING ${columns}`.pipe(webhooks, Effect.orDie, Effect.map(first))
        },
        remove: (id, scope) =>
          sql`DELETE FROM webhooks w WHERE w.id = ${id}::uuid AND ${within(scope)} RETURNING ${columns}`.pipe(
            webhooks,
            Effect.orDie,
            Effect.map(first)
          ),
        target: (id) =>
          sql`SELECT url, secret, secret_sealed FROM webhooks WHERE id = ${id}::uuid`.pipe(
            decodeRows(WebhookTarget),
            Effect.orDie,
            Effect.map(first)
          ),
        deliveries: (webhookId, scope, status, limit) =>
          sql`
            SELECT ${deliveryColumns} FROM extraction_jobs j JOIN webhooks w ON w.id = j.webhook_id
            WHERE j.kind = 'webhook' AND j.webhook_id = ${webhookId}::uuid AND ${within(scope)}
              AND ${status === undefined ? sql`true` : sql`j.status = ${status}`}
            ORDER BY j.created_at DESC, j.event_seq DESC
            LIMIT ${limit}`.pipe(deliveryRows, Effect.orDie),
        delivery: (webhookId, deliveryId, scope) =>
          sql`
            SELECT ${deliveryColumns} FROM extraction_jobs j JOIN webhooks w ON w.id = j.webhook_id
            WHERE j.kind = 'webhook' AND j.id = ${deliveryId}::uuid AND j.webhook_id = ${webhookId}::uuid
              AND ${within(scope)}`.pipe(deliveryRows, Effect.orDie, Effect.map(first)),
        replay: (webhookId, deliveryId, scope) =>
          sql`
            WITH replayed AS (
              INSERT INTO extraction_jobs (kind, webhook_id, subject_id, event_seq, message_ids, input)
              SELECT 'webhook', j.webhook_id, j.subject_id, nextval('webhook_event_seq'), '{}', j.input
              FROM extraction_jobs j JOIN webhooks w ON w.id = j.webhook_id
              WHERE j.kind = 'webhook' AND j.id = ${deliveryId}::uuid AND j.webhook_id = ${webhookId}::uuid
                AND j.status IN ('succeeded', 'failed') AND ${within(scope)}
              RETURNING *
            )
            SELECT ${deliveryColumns} FROM replayed j`.pipe(deliveryRows, Effect.orDie, Effect.map(first))
      })
    })
  )
}
