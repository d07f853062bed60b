import { Effect, Option, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { firstIssue } from "../domain/schemaIssues.ts"
import { checkUserId } from "../pipeline/readRequest.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { Conversations } from "./Conversations.ts"
import { errorAnswer, listPageOf, makeRouteScope } from "./routeScope.ts"
import type { ResponseScope } from "./StoredResponses.ts"

/** As OpenAI's: at most 20 items a call, 16 metadata entries. */
const Items = Schema.Array(Schema.Record(Schema.String, Schema.Unknown)).check(Schema.isMaxLength(20))
const Metadata = Schema.Record(Schema.String, Schema.String.check(Schema.isMaxLength(512))).check(
  Schema.makeFilter((metadata) => Object.keys(metadata).length <= 16, { expected: "at most 16 entries" })
)
const CreateBody = Schema.Struct({
  items: Schema.optionalKey(Items),
  metadata: Schema.optionalKey(Schema.NullOr(Metadata))
})
const UpdateBody = Schema.Struct({ metadata: Metadata })
const AddBody = Schema.Struct({ items: Items })

const notFound = (id: string) => errorAnswer(404, "conversation_not_found", `Conversation with id '${id}' not found.`)

/** A 400 the handler answers with. */
class Refused {
  readonly response: HttpServerResponse.HttpServerResponse
  constructor(response: HttpServerResponse.HttpServerResponse) {
    this.response = response
  }
}

type Handler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  Refused,
  HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext
>

/** The request's JSON body as `schema` reads it, else a 400 naming the field at fault. */
const bodyAs = <S extends Schema.Codec<unknown, unknown>>(schema: S) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* Effect.orElseSucceed(request.text, () => "")
    return yield* Schema.decodeUnknownEffect(Schema.fromJsonString(schema))(text === "" ? "{}" : text).pipe(
      Effect.mapError((error) => {
        const { message, path } = firstIssue(error)
        const param = path.join(".")
        return new Refused(
          errorAnswer(400, "invalid_request", `Invalid ${param || "body"}: ${message}`, param || undefined)
        )
      })
    )
  })

const answer = (handler: Handler) => Effect.catch(handler, (refused) => Effect.succeed(refused.response))

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

/**
 * The Conversations API (`/v1/conversations…`) where the gateway keeps the state (the request's
 * provider keeps none, or `UPSTREAM_RESPONSES_STATE=gateway`); otherwise the call goes to the provider.
 * A conversation belongs to the user who created it (`X-Service-Id`, required then): reads reach it
 * within the key's namespace, and only that user's when the request names one.
 */
export const ConversationsRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const conversations = yield* Conversations
    const profiles = yield* Profiles
    const { scope, keptHere } = yield* makeRouteScope

    /** The conversation in the path, found in the caller's scope, or a 404. */
    const found = Effect.gen(function* () {
      const { id = "" } = yield* HttpRouter.params
      const caller = yield* scope
      const conversation = Option.isSome(caller) ? yield* conversations.find(id, caller.value) : Option.none()
      if (Option.isNone(conversation) || Option.isNone(caller)) return yield* Effect.fail(new Refused(notFound(id)))
      return { conversation: conversation.value, caller: caller.value satisfies ResponseScope }
    })

    const route = (method: "GET" | "POST" | "DELETE", path: `/v1/${string}`, handler: Handler) =>
      router.add(method, path, keptHere(answer(handler)))

    yield* route(
      "POST",
      "/v1/conversations",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const user = request.headers["x-service-id"]
        if (user === undefined || user === "") {
          return yield* Effect.fail(
            new Refused(
              errorAnswer(
                400,
                "missing_user_id",
                "A conversation belongs to a user: name it with the X-Service-Id header"
              )
            )
          )
        }
        const userId = yield* checkUserId(user, "X-Service-Id").pipe(
          Effect.mapError((invalid) => new Refused(errorAnswer(400, invalid.code, invalid.message, "X-Service-Id")))
        )
        const body = yield* bodyAs(CreateBody)
        const { profile } = yield* profiles
          .getOrCreate(userId)
          .pipe(
            Effect.mapError(
              () => new Refused(errorAnswer(409, "user_id_taken", "That user id names another profile's internal id"))
            )
          )
        return json(yield* conversations.create(profile.id, body.metadata ?? {}, body.items ?? []))
      })
    )
    yield* route(
      "GET",
      "/v1/conversations/:id",
      Effect.map(found, ({ conversation }) => json(conversation))
    )
    yield* route(
      "POST",
      "/v1/conversations/:id",
      Effect.gen(function* () {
        const { conversation, caller } = yield* found
        const body = yield* bodyAs(UpdateBody)
        const updated = yield* conversations.update(conversation.id, caller, body.metadata)
        return json(Option.getOrElse(updated, () => conversation))
      })
    )
    yield* route(
      "DELETE",
      "/v1/conversations/:id",
      Effect.gen(function* () {
        const { conversation, caller } = yield* found
        yield* conversations.remove(conversation.id, caller)
        return json({ id: conversation.id, object: "conversation.deleted", deleted: true })
      })
    )
    yield* route(
      "POST",
      "/v1/conversations/:id/items",
      Effect.gen(function* () {
        const { conversation } = yield* found
        const body = yield* bodyAs(AddBody)
        const added = yield* conversations.addItems(conversation.id, body.items)
        return json({
          object: "list",
          data: added,
          first_id: added[0]?.["id"] ?? null,
          last_id: added.at(-1)?.["id"] ?? null,
          has_more: false
        })
      })
    )
    yield* route(
      "GET",
      "/v1/conversations/:id/items",
      Effect.gen(function* () {
        const { conversation } = yield* found
        const request = yield* HttpServerRequest.HttpServerRequest
        const list = listPageOf(request)
        if ("refused" in list) return yield* Effect.fail(new Refused(list.refused))
        const page = yield* conversations.items(conversation.id, list.page)
        return json({
          object: "list",
          data: page.data,
          first_id: page.data[0]?.["id"] ?? null,
          last_id: page.data.at(-1)?.["id"] ?? null,
          has_more: page.hasMore
        })
      })
    )
    yield* route(
      "GET",
      "/v1/conversations/:id/items/:itemId",
      Effect.gen(function* () {
        const { conversation } = yield* found
        const { itemId = "" } = yield* HttpRouter.params
        const item = yield* conversations.item(conversation.id, itemId)
        if (Option.isNone(item))
          return yield* Effect.fail(
            new Refused(errorAnswer(404, "item_not_found", `Item with id '${itemId}' not found.`))
          )
        return json(item.value)
      })
    )
    yield* route(
      "DELETE",
      "/v1/conversations/:id/items/:itemId",
      Effect.gen(function* () {
        const { conversation } = yield* found
        const { itemId = "" } = yield* HttpRouter.params
        if (!(yield* conversations.removeItem(conversation.id, itemId)))
          return yield* Effect.fail(
            new Refused(errorAnswer(404, "item_not_found", `Item with id '${itemId}' not found.`))
          )
        return json(conversation)
      })
    )
  })
)
