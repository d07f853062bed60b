import { Effect, Option, Predicate } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorAnswer, listPageOf, makeRouteScope } from "./routeScope.ts"
import { type ResponseScope, type StoredResponse, StoredResponses } from "./StoredResponses.ts"

/** No such response for this caller (or none of its user's, when it names one). */
const notFound = (id: string) =>
  Effect.succeed(errorAnswer(404, "response_not_found", `Response with id '${id}' not found.`))

/** A stored request's input items as OpenAI lists them: each with an id (given ones kept). */
const listedItems = (response: StoredResponse) =>
  response.inputItems.map((item, index) => {
    const fields: Record<PropertyKey, unknown> = Predicate.isObject(item) ? item : {}
    return { ...fields, id: fields["id"] ?? `${response.id}_in_${index}` }
  })

/**
 * `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}` and `GET /v1/responses/{id}/input_items` for
 * the responses the gateway keeps, in the caller's namespace (and of its user, when the request names
 * one with `X-Service-Id`): any other id is another's or unknown, 404. An id the gateway does not keep
 * goes to the provider when the provider keeps the state (`UPSTREAM_RESPONSES_STATE=passthrough`).
 */
export const ResponsesRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const stored = yield* StoredResponses
    const { scope, providerKeepsState, passThrough } = yield* makeRouteScope

    /** An id the gateway does not keep: the provider's, if it keeps state; else nobody's. */
    const elsewhere = (id: string) =>
      Effect.flatMap(providerKeepsState, (keeps) => (keeps ? passThrough : notFound(id)))

    const withResponse = (
      answer: (
        response: StoredResponse,
        scope: ResponseScope
      ) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
    ) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        if (id === undefined) return yield* notFound("")
        const caller = yield* scope
        const found = Option.isSome(caller) ? yield* stored.find(id, caller.value) : Option.none()
        if (Option.isNone(found) || Option.isNone(caller)) return yield* elsewhere(id)
        return yield* answer(found.value, caller.value)
      })

    yield* router.add(
      "GET",
      "/v1/responses/:id",
      withResponse((response) => Effect.succeed(HttpServerResponse.jsonUnsafe(response.response)))
    )
    yield* router.add(
      "DELETE",
      "/v1/responses/:id",
      withResponse((response, caller) =>
        Effect.as(
          stored.remove(response.id, caller),
          HttpServerResponse.jsonUnsafe({ id: response.id, object: "response", deleted: true })
        )
      )
    )
    yield* router.add(
      "GET",
      "/v1/responses/:id/input_items",
      withResponse((response) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const list = listPageOf(request)
          if ("refused" in list) return list.refused
          const { limit, order, after } = list.page
          const items = listedItems(response)
          const ordered = order === "desc" ? [...items].reverse() : items
          const start = after === undefined ? 0 : ordered.findIndex((item) => item.id === after) + 1
          const page = ordered.slice(start, start + limit)
          return HttpServerResponse.jsonUnsafe({
            object: "list",
            data: page,
            first_id: page[0]?.id ?? null,
            last_id: page.at(-1)?.id ?? null,
            has_more: start + limit < ordered.length
          })
        })
      )
    )
  })
)
