import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ProfileId } from "../domain/Profile.ts"
import { inputItemId, listedItem, ownItemId } from "../responses/listedItem.ts"
import { type StoredResponse, StoredResponsesRepo } from "../responses/StoredResponsesRepo.ts"
import { answered, checkedId, errorAnswer, listPageOf, makeRouteScope, Refused } from "./routeScope.ts"

/** No such response of this user (another user's answers exactly the same). */
const notFound = (id: string) =>
  new Refused(errorAnswer(404, "response_not_found", `Response with id '${id}' not found.`))

/** A stored request's input items as OpenAI lists them (`listedItem`): each with an id, its own if it has one. */
const listedItems = (response: StoredResponse) =>
  response.inputItems.map((item, index) => listedItem(item, ownItemId(item) ?? inputItemId(response.id, index, item)))

type Answer = (
  response: StoredResponse,
  profileId: ProfileId
) => Effect.Effect<HttpServerResponse.HttpServerResponse, Refused, HttpServerRequest.HttpServerRequest>

/**
 * `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items` and
 * `POST /v1/responses/{id}/cancel` for the responses the gateway keeps: always the request's user's
 * (`RequestIdentity`: `X-Service-Id` and the `resolveUser` plugins), found by id within that user's
 * profile; another user's id answers like an unknown one, 404. Where the request's provider keeps the
 * state (`UPSTREAM_RESPONSES_STATE=passthrough`), an id the gateway does not keep for the user it
 * resolves (or a request with no such user) goes to the provider.
 */
export const ResponsesRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const stored = yield* StoredResponsesRepo
    const { owner, providerKeepsState, passThrough } = yield* makeRouteScope

    const findFor = (id: string, profile: Option.Option<{ readonly id: ProfileId }>) =>
      Option.isSome(profile)
        ? Effect.map(
            stored.find(id, profile.value.id),
            Option.map((found) => ({ found, profileId: profile.value.id }))
          )
        : Effect.succeedNone

    const withResponse = (answer: Answer) =>
      answered(
        Effect.gen(function* () {
          const { id = "" } = yield* HttpRouter.params
          yield* checkedId(id, "invalid_response_id", "response id")
          if (yield* providerKeepsState) {
            // The provider's id, unless the gateway keeps it for a user the request names.
            const kept = yield* findFor(id, yield* Effect.orElseSucceed(owner, Option.none))
            return Option.isSome(kept) ? yield* answer(kept.value.found, kept.value.profileId) : yield* passThrough
          }
          const kept = yield* findFor(id, yield* owner)
          if (Option.isNone(kept)) return yield* Effect.fail(notFound(id))
          return yield* answer(kept.value.found, kept.value.profileId)
        })
      )

    yield* router.add(
      "GET",
      "/v1/responses/:id",
      withResponse((response) => Effect.succeed(HttpServerResponse.jsonUnsafe(response.response)))
    )
    yield* router.add(
      "DELETE",
      "/v1/responses/:id",
      withResponse((response, profileId) =>
        Effect.as(
          stored.remove(response.id, profileId),
          HttpServerResponse.jsonUnsafe({ id: response.id, object: "response", deleted: true })
        )
      )
    )
    yield* router.add(
      "GET",
      "/v1/responses/:id/input_items",
      withResponse((response) =>
        Effect.gen(function* () {
          const { limit, order, after } = yield* listPageOf(yield* HttpServerRequest.HttpServerRequest)
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
    // A response the gateway keeps has always finished (background responses are not kept here).
    yield* router.add(
      "POST",
      "/v1/responses/:id/cancel",
      withResponse((response) =>
        Effect.fail(
          new Refused(
            errorAnswer(
              400,
              "response_not_cancellable",
              `Response '${response.id}' has finished: only background responses can be cancelled`
            )
          )
        )
      )
    )
  })
)
