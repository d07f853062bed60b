import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { currentNamespace } from "../domain/Namespace.ts"
import { pageSize } from "../http/apiFields.ts"
import { BadRequest, toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Webhooks } from "./Webhooks.ts"
import { WebhookCreated, WebhooksGroup, WebhookUpdated } from "./WebhooksApi.ts"

export const WebhooksHandlers = HttpApiBuilder.group(
  sliceApi(WebhooksGroup),
  "webhooks",
  Effect.fn(function* (handlers) {
    const webhooks = yield* Webhooks
    return handlers
      .handle("create", ({ payload }) =>
        Effect.flatMap(currentNamespace, (caller) =>
          webhooks.create(
            {
              url: payload.url,
              events: payload.events,
              description: payload.description,
              namespace: payload.namespace
            },
            caller
          )
        ).pipe(
          Effect.map(({ webhook, secret }) => new WebhookCreated({ ...webhook, secret })),
          Effect.mapError(toApiError)
        )
      )
      .handle("list", () =>
        Effect.flatMap(currentNamespace, (caller) => Effect.map(webhooks.list(caller), (list) => ({ webhooks: list })))
      )
      .handle("get", ({ params }) =>
        Effect.flatMap(currentNamespace, (caller) => webhooks.get(params.id, caller)).pipe(
          Effect.map((webhook) => ({ webhook })),
          Effect.mapError(toApiError)
        )
      )
      .handle("update", ({ params, payload }) =>
        Effect.flatMap(currentNamespace, (caller) =>
          webhooks.update(
            params.id,
            {
              url: payload.url,
              events: payload.events,
              description: payload.description,
              rotateSecret: payload.rotateSecret ?? false
            },
            caller
          )
        ).pipe(
          Effect.map(({ webhook, secret }) =>
            secret === undefined ? new WebhookUpdated({ webhook }) : new WebhookUpdated({ webhook, secret })
          ),
          // An edit is refused only for what it gives (a URL, events): a 400 (the 403 of a namespace is create's).
          Effect.mapError((error) =>
            error._tag === "WebhookRefused" ? BadRequest.of(error.code, error.message, error.param) : toApiError(error)
          )
        )
      )
      .handle("test", ({ params }) =>
        Effect.flatMap(currentNamespace, (caller) => webhooks.test(params.id, caller)).pipe(Effect.mapError(toApiError))
      )
      .handle("delete", ({ params }) =>
        Effect.flatMap(currentNamespace, (caller) => webhooks.remove(params.id, caller)).pipe(
          Effect.map((webhook) => ({ webhook })),
          Effect.mapError(toApiError)
        )
      )
      .handle("deliveries", ({ params, query }) =>
        Effect.flatMap(currentNamespace, (caller) =>
          webhooks.deliveries(params.id, caller, { status: query.status, limit: pageSize(query.limit) })
        ).pipe(
          Effect.map((deliveries) => ({ deliveries })),
          Effect.mapError(toApiError)
        )
      )
      .handle("replay", ({ params }) =>
        Effect.flatMap(currentNamespace, (caller) => webhooks.replay(params.id, params.deliveryId, caller)).pipe(
          Effect.map((delivery) => ({ delivery })),
          Effect.mapError(toApiError)
        )
      )
  })
)
