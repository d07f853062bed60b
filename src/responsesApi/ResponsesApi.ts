import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ProxyErrors, providerHeaders } from "../http/proxyDocs.ts"
import { itemIdProblem, stateIdProblem } from "../responses/stateIds.ts"

/**
 * The Responses API's kept state (`/v1/responses/{id}…`, `/v1/conversations…`) as the OpenAPI document
 * shows it, from the schemas the routes decode with (`ResponsesRoutes`, `ConversationsRoutes`). The
 * routes are written on the router (they pass a request to the provider unread when it keeps the
 * state, which `HttpApi` handlers cannot), so this group has no handlers; a test checks that every route
 * served is declared here or in the other groups.
 */

/** An item whose own id the gateway could keep (or none: one is given). */
const Item = Schema.Record(Schema.String, Schema.Unknown).check(
  Schema.makeFilter(
    (item) => {
      const problem = itemIdProblem(item["id"])
      return problem === undefined ? true : `id ${problem}`
    },
    { expected: "an item whose id, if it has one, is 1–200 characters without control characters" }
  )
)
/** As OpenAI's: at most 20 items a call, 16 metadata entries. */
const Items = Schema.Array(Item).check(Schema.isMaxLength(20))
const Metadata = Schema.Record(Schema.String, Schema.String.check(Schema.isMaxLength(512))).check(
  Schema.makeFilter((metadata) => Object.keys(metadata).length <= 16, { expected: "at most 16 entries" })
)
export const CreateBody = Schema.Struct({
  items: Schema.optionalKey(Items),
  metadata: Schema.optionalKey(Schema.NullOr(Metadata))
})
export const UpdateBody = Schema.Struct({ metadata: Metadata })
export const AddBody = Schema.Struct({ items: Items })

const PAGE = { minimum: 1, maximum: 100 }
const order = Schema.optionalKey(Schema.Literals(["asc", "desc"]))
const after = Schema.optionalKey(
  Schema.String.check(Schema.makeFilter((id: string) => stateIdProblem(id) === undefined))
)

/** A list call's query, as OpenAI's list endpoints take it (the routes decode it from the URL's text). */
export const ListQuery = Schema.Struct({
  limit: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween(PAGE))),
  order,
  after
})

/** The same query as the document shows it (`limit` an integer). */
const DocumentedListQuery = Schema.Struct({
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween(PAGE))),
  order,
  after
})

const UserHeaders = Schema.Struct({
  ...providerHeaders,
  "x-service-id": Schema.optionalKey(Schema.String).annotate({
    description: "The user whose state this is (through the resolveUser plugins, as on every route)"
  })
})

const Kept = Schema.Record(Schema.String, Schema.Unknown)
const Conversation = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("conversation"),
  created_at: Schema.Int,
  metadata: Schema.Record(Schema.String, Schema.String)
})
const Deleted = Schema.Struct({ id: Schema.String, object: Schema.String, deleted: Schema.Literal(true) })
const ItemList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Kept).annotate({
    description:
      "The items as OpenAI lists them: each with its `id` and `type`, a message's text as parts " +
      '(`input_text`; `output_text` for the assistant\'s), `status: "completed"`'
  }),
  first_id: Schema.NullOr(Schema.String),
  last_id: Schema.NullOr(Schema.String),
  has_more: Schema.Boolean
})

const SCOPE =
  "Kept by the gateway where it keeps Responses state (Anthropic; `UPSTREAM_RESPONSES_STATE=gateway`), for the " +
  "request's user only (another user's id answers like an unknown one, 404); else passed to the provider."

const docs = (summary: string, description = SCOPE) => OpenApi.annotations({ summary, description })

const id = { id: Schema.String }
const itemPath = { id: Schema.String, itemId: Schema.String }

export class ResponsesStateGroup extends HttpApiGroup.make("responsesState", { topLevel: true })
  .add(
    HttpApiEndpoint.get("getResponse", "/v1/responses/:id", {
      params: id,
      headers: UserHeaders,
      success: Kept.annotate({ description: "The response object" }),
      error: ProxyErrors
    }).annotateMerge(docs("Retrieve a response")),
    HttpApiEndpoint.delete("deleteResponse", "/v1/responses/:id", {
      params: id,
      headers: UserHeaders,
      success: Deleted,
      error: ProxyErrors
    }).annotateMerge(docs("Delete a response")),
    HttpApiEndpoint.get("responseInputItems", "/v1/responses/:id/input_items", {
      params: id,
      query: DocumentedListQuery,
      headers: UserHeaders,
      success: ItemList,
      error: ProxyErrors
    }).annotateMerge(docs("List a response's input items")),
    HttpApiEndpoint.post("cancelResponse", "/v1/responses/:id/cancel", {
      params: id,
      headers: UserHeaders,
      success: Kept,
      error: ProxyErrors
    }).annotateMerge(
      docs(
        "Cancel a background response",
        "Passed to the provider where it keeps the state; a response the gateway kept has finished: 400 " +
          "`response_not_cancellable`."
      )
    ),
    HttpApiEndpoint.post("createConversation", "/v1/conversations", {
      headers: UserHeaders,
      payload: CreateBody,
      success: Conversation,
      error: ProxyErrors
    }).annotateMerge(
      docs(
        "Create a conversation",
        `OpenAI's Conversations API. ${SCOPE} A response created with \`conversation\` gets its items before its ` +
          "input and adds its input and output to it."
      )
    ),
    HttpApiEndpoint.get("getConversation", "/v1/conversations/:id", {
      params: id,
      headers: UserHeaders,
      success: Conversation,
      error: ProxyErrors
    }).annotateMerge(docs("Retrieve a conversation")),
    HttpApiEndpoint.post("updateConversation", "/v1/conversations/:id", {
      params: id,
      headers: UserHeaders,
      payload: UpdateBody,
      success: Conversation,
      error: ProxyErrors
    }).annotateMerge(docs("Update a conversation's metadata")),
    HttpApiEndpoint.delete("deleteConversation", "/v1/conversations/:id", {
      params: id,
      headers: UserHeaders,
      success: Deleted,
      error: ProxyErrors
    }).annotateMerge(docs("Delete a conversation")),
    HttpApiEndpoint.post("addItems", "/v1/conversations/:id/items", {
      params: id,
      headers: UserHeaders,
      payload: AddBody,
      success: ItemList,
      error: ProxyErrors
    }).annotateMerge(
      docs(
        "Add items to a conversation",
        `${SCOPE} An item sent again with an id already in the conversation is not added twice.`
      )
    ),
    HttpApiEndpoint.get("listItems", "/v1/conversations/:id/items", {
      params: id,
      query: DocumentedListQuery,
      headers: UserHeaders,
      success: ItemList,
      error: ProxyErrors
    }).annotateMerge(docs("List a conversation's items")),
    HttpApiEndpoint.get("getItem", "/v1/conversations/:id/items/:itemId", {
      params: itemPath,
      headers: UserHeaders,
      success: Kept,
      error: ProxyErrors
    }).annotateMerge(docs("Retrieve a conversation's item")),
    HttpApiEndpoint.delete("deleteItem", "/v1/conversations/:id/items/:itemId", {
      params: itemPath,
      headers: UserHeaders,
      success: Conversation,
      error: ProxyErrors
    }).annotateMerge(docs("Delete a conversation's item"))
  )
  .annotateMerge(
    OpenApi.annotations({ description: "The Responses API's state: stored responses and conversations." })
  ) {}
