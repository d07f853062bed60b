import { ByteSize, Effect, Option, Schema } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { firstIssue } from "../domain/schemaIssues.ts"
import { RequestTooLarge } from "../http/RequestErrors.ts"
import { ConversationsConfig } from "../responses/ConversationsConfig.ts"
import { ConversationsRepo, jsonBytes } from "../responses/ConversationsRepo.ts"
import { AddBody, CreateBody, UpdateBody } from "./ResponsesApi.ts"
import { answered, checkedId, errorAnswer, listPageOf, makeRouteScope, Refused, refuse } from "./routeScope.ts"

const notFound = (id: string) =>
  new Refused(errorAnswer(404, "conversation_not_found", `Conversation with id '${id}' not found.`))
const itemNotFound = (id: string) => new Refused(errorAnswer(404, "item_not_found", `Item with id '${id}' not found.`))

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

/**
 * The Conversations API (`/v1/conversations…`) where the gateway keeps the state (the request's
 * provider keeps none, or `UPSTREAM_RESPONSES_STATE=gateway`); otherwise the call goes to the provider.
 * Every call acts for the request's user (`RequestIdentity`: `X-Service-Id` and the `resolveUser`
 * plugins; none: 400): a conversation belongs to the user who created it and is found by its id within
 * that user's profile only (another user's answers 404, like an unknown one). A call's body is at most
 * `CONVERSATION_MAX_REQUEST_BYTES`; what a user keeps is held to `CONVERSATIONS_MAX_PER_USER`
 * conversations and `CONVERSATIONS_MAX_BYTES_PER_USER` bytes.
 */
export const ConversationsRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const conversations = yield* ConversationsRepo
    const { maxRequestBytes } = yield* ConversationsConfig
    const { user, owner, profileFor, keptHere } = yield* makeRouteScope

    /** The request's JSON body as `schema` reads it (read up to the limit), else a 400 naming the field at fault. */
    const bodyAs = <S extends Schema.Codec<unknown, unknown>>(schema: S) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const text = yield* request.text.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxRequestBytes)),
          Effect.catch(() => refuse(new RequestTooLarge({ limit: maxRequestBytes })))
        )
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

    /** The conversation in the path, the request's user's, or a 404. */
    const found = Effect.gen(function* () {
      const { id = "" } = yield* HttpRouter.params
      yield* checkedId(id, "invalid_conversation_id", "conversation id")
      const profile = yield* owner
      const conversation = Option.isSome(profile) ? yield* conversations.find(id, profile.value.id) : Option.none()
      if (Option.isNone(profile) || Option.isNone(conversation)) return yield* Effect.fail(notFound(id))
      return { conversation: conversation.value, profileId: profile.value.id }
    })

    /** The item id in the path, or the 400 that says why it cannot be one. */
    const itemIdOf = Effect.flatMap(HttpRouter.params, ({ itemId = "" }) =>
      checkedId(itemId, "invalid_item_id", "item id")
    )

    const route = (
      method: "GET" | "POST" | "DELETE",
      path: `/v1/${string}`,
      handler: Effect.Effect<
        HttpServerResponse.HttpServerResponse,
        Refused,
        HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext
      >
    ) => router.add(method, path, keptHere(answered(handler)))

    yield* route(
      "POST",
      "/v1/conversations",
      Effect.gen(function* () {
        const creator = yield* user
        const body = yield* bodyAs(CreateBody)
        const profile = yield* profileFor(creator)
        const items = body.items ?? []
        const metadata = body.metadata ?? {}
        yield* conversations
          .room(profile.id, { bytes: jsonBytes(items) + jsonBytes(metadata), newConversation: true })
          .pipe(Effect.catch(refuse))
        return json(yield* conversations.create(profile.id, metadata, items))
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
        const { conversation, profileId } = yield* found
        const body = yield* bodyAs(UpdateBody)
        yield* conversations
          .room(profileId, { bytes: jsonBytes(body.metadata), newConversation: false })
          .pipe(Effect.catch(refuse))
        const updated = yield* conversations.update(conversation.id, profileId, body.metadata)
        return json(Option.getOrElse(updated, () => conversation))
      })
    )
    yield* route(
      "DELETE",
      "/v1/conversations/:id",
      Effect.gen(function* () {
        const { conversation, profileId } = yield* found
        yield* conversations.remove(conversation.id, profileId)
        return json({ id: conversation.id, object: "conversation.deleted", deleted: true })
      })
    )
    yield* route(
      "POST",
      "/v1/conversations/:id/items",
      Effect.gen(function* () {
        const { conversation, profileId } = yield* found
        const body = yield* bodyAs(AddBody)
        yield* conversations
          .room(profileId, { bytes: jsonBytes(body.items), newConversation: false })
          .pipe(Effect.catch(refuse))
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
        const page = yield* conversations.items(
          conversation.id,
          yield* listPageOf(yield* HttpServerRequest.HttpServerRequest)
        )
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
        const itemId = yield* itemIdOf
        const { conversation } = yield* found
        const item = yield* conversations.item(conversation.id, itemId)
        if (Option.isNone(item)) return yield* Effect.fail(itemNotFound(itemId))
        return json(item.value)
      })
    )
    yield* route(
      "DELETE",
      "/v1/conversations/:id/items/:itemId",
      Effect.gen(function* () {
        const itemId = yield* itemIdOf
        const { conversation } = yield* found
        if (!(yield* conversations.removeItem(conversation.id, itemId))) return yield* Effect.fail(itemNotFound(itemId))
        return json(conversation)
      })
    )
  })
)
