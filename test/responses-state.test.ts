import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { nativeResponse } from "./support/responsesWire.ts"
import { expectError } from "./support/wire.ts"

/** The Responses API's conversation state (previous_response_id, store, retrieve, delete, input items). */

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-upstream-state",
    ANTHROPIC_BASE_URL: up.url,
    ANTHROPIC_API_KEY: "sk-ant-state"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const claude = (userId: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": userId, "X-Upstream-Provider": "anthropic" }
  })

const says = (text: string) =>
  up.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text }]) })

const streamOf = (pieces: ReadonlyArray<string>) => [
  anthropicEvent("message_start", {
    message: { ...anthropicMessage([], ""), stop_reason: null, usage: { input_tokens: 30, output_tokens: 1 } }
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  ...pieces.map((text) => anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 12 } }),
  anthropicEvent("message_stop", {})
]

/** The conversation Anthropic received, as role: text lines (the system prompt left out). */
const conversationSent = (index: number) =>
  (
    up.requests[index]!.body as { messages: Array<{ role: string; content: string | Array<{ text?: string }> }> }
  ).messages.map(
    (message) =>
      `${message.role}: ${typeof message.content === "string" ? message.content : message.content.map((part) => part.text ?? "").join(" + ")}`
  )

/** A listed message's content as the official SDK types it: each part's type and text. */
const textParts = (item: OpenAI.Responses.ResponseItem | OpenAI.Conversations.ConversationItem) =>
  item.type === "message" ? item.content.map((part) => [part.type, "text" in part ? part.text : undefined]) : []

describe("Responses API state kept by the gateway (Anthropic behind it)", () => {
  it("chains responses with previous_response_id: the provider gets the whole conversation", async () => {
    const client = claude("state-chain")
    says("Nice to meet you, Ada.")
    const first = await client.responses.create({ model: "claude-test", input: "My name is Ada." })
    expect(first.id).toMatch(/^resp_[0-9a-f]{48}$/)
    expect((first as unknown as { store: boolean }).store).toBe(true)
    expect(first.output_text).toBe("Nice to meet you, Ada.")

    says("Your name is Ada.")
    const second = await client.responses.create({
      model: "claude-test",
      input: [{ role: "user", content: "What is my name?" }],
      previous_response_id: first.id
    })
    expect(second.previous_response_id).toBe(first.id)
    // Each turn is recorded under the id the client got.
    const recorded = await gw.query<{ answer_id: string }>(
      `SELECT m.answer_id FROM messages m JOIN profiles p ON p.id = m.profile_id
       WHERE p.external_id = 'state-chain' AND m.role = 'assistant' ORDER BY m.created_at`
    )
    expect(recorded.map((row) => row.answer_id)).toEqual([first.id, second.id])
    expect(conversationSent(1)).toEqual([
      "user: My name is Ada.",
      "assistant: Nice to meet you, Ada.",
      "user: What is my name?"
    ])

    says("You asked my name.")
    await client.responses.create({ model: "claude-test", input: "What did I ask?", previous_response_id: second.id })
    expect(conversationSent(2)).toEqual([
      "user: My name is Ada.",
      "assistant: Nice to meet you, Ada.",
      "user: What is my name?",
      "assistant: Your name is Ada.",
      "user: What did I ask?"
    ])
  })

  it("retrieves a stored response, lists its input items, deletes it", async () => {
    const client = claude("state-retrieve")
    says("Hello.")
    const created = await client.responses.create({
      model: "claude-test",
      input: [
        { role: "user", content: "First line." },
        { role: "user", content: "Second line." }
      ]
    })
    const retrieved = await client.responses.retrieve(created.id)
    expect(retrieved).toMatchObject({ id: created.id, object: "response", status: "completed", store: true })
    expect(retrieved.output_text).toBe("Hello.")
    expect(retrieved.usage).toMatchObject({ input_tokens: 20, output_tokens: 9 })

    const items = await client.responses.inputItems.list(created.id, { order: "asc" })
    expect(items.data.map(textParts)).toEqual([[["input_text", "First line."]], [["input_text", "Second line."]]])
    const newestFirst = await client.responses.inputItems.list(created.id, { limit: 1 })
    expect(newestFirst.data.map(textParts)).toEqual([[["input_text", "Second line."]]])
    expect(newestFirst.has_more).toBe(true)
    const next = await client.responses.inputItems.list(created.id, { limit: 1, after: newestFirst.data[0]!.id })
    expect(next.data.map(textParts)).toEqual([[["input_text", "First line."]]])
    expect(next.has_more).toBe(false)

    const deleted: unknown = await client.responses.delete(created.id)
    expect(deleted).toEqual({ id: created.id, object: "response", deleted: true })
    await expect(client.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 })
    // Nothing was asked of the provider but the one answer.
    expect(up.requests).toHaveLength(1)
  })

  it("lists input items as OpenAI does: text as input_text parts (output_text for the assistant), ids and status", async () => {
    const client = claude("state-item-shape")
    says("Nice to meet you, Ada.")
    const first = await client.responses.create({ model: "claude-test", input: "My name is Ada." })
    says("Ada.")
    const second = await client.responses.create({
      model: "claude-test",
      previous_response_id: first.id,
      input: [
        { role: "developer", content: "Answer in one word." },
        { role: "assistant", content: "Anything else?" },
        { type: "message", role: "user", content: [{ type: "input_text", text: "What is my name?" }] }
      ]
    })

    // The provider gets the conversation as it was sent.
    expect(conversationSent(1)).toEqual([
      "user: My name is Ada.",
      "assistant: Nice to meet you, Ada. + Anything else?",
      "user: What is my name?"
    ])

    const [item] = (await client.responses.inputItems.list(first.id)).data
    expect(item).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{48}$/),
      type: "message",
      role: "user",
      status: "completed",
      content: [{ type: "input_text", text: "My name is Ada." }]
    })
    const listed = await client.responses.inputItems.list(second.id, { order: "asc" })
    expect(listed.data).toMatchObject([
      { type: "message", role: "developer", status: "completed" },
      { type: "message", role: "assistant", status: "completed" },
      { type: "message", role: "user", status: "completed" }
    ])
    expect(listed.data.map(textParts)).toEqual([
      [["input_text", "Answer in one word."]],
      [["output_text", "Anything else?"]],
      [["input_text", "What is my name?"]]
    ])
    expect(listed.data[1]).toMatchObject({ content: [{ annotations: [] }] })
    // Each item has an id of its own, the same on every read (a page goes on after it).
    const ids = listed.data.map((listedItem) => listedItem.id)
    expect(new Set([...ids, item!.id]).size).toBe(4)
    expect((await client.responses.inputItems.list(second.id, { order: "asc" })).data.map((x) => x.id)).toEqual(ids)
    const rest = await client.responses.inputItems.list(second.id, { order: "asc", after: ids[0]! })
    expect(rest.data.map((x) => x.id)).toEqual(ids.slice(1))
  })

  it("keeps a streamed response too", async () => {
    const client = claude("state-stream")
    up.enqueue({ kind: "sse", frames: streamOf(["Streamed ", "hello."]) })
    const stream = await client.responses.create({ model: "claude-test", input: "Stream to me.", stream: true })
    let completedId = ""
    for await (const event of stream) if (event.type === "response.completed") completedId = event.response.id
    expect(completedId).toMatch(/^resp_/)
    const kept = await client.responses.retrieve(completedId)
    expect(kept.output_text).toBe("Streamed hello.")

    says("Yes.")
    await client.responses.create({ model: "claude-test", input: "Did you stream?", previous_response_id: completedId })
    expect(conversationSent(1)).toEqual(["user: Stream to me.", "assistant: Streamed hello.", "user: Did you stream?"])
  })

  it("answers another user's response id with 404, and refuses to continue it, storing nothing", async () => {
    says("Secret kept.")
    const mine = await claude("state-owner").responses.create({ model: "claude-test", input: "My PIN is 4321." })
    const other = claude("state-other")
    await expect(other.responses.retrieve(mine.id)).rejects.toMatchObject({ status: 404 })
    await expect(other.responses.delete(mine.id)).rejects.toMatchObject({ status: 404 })
    await expect(other.responses.inputItems.list(mine.id)).rejects.toMatchObject({ status: 404 })

    const before = await gw.counts()
    const refused = await gw.request("POST", "/v1/responses", {
      headers: { "x-service-id": "state-intruder", "x-upstream-provider": "anthropic" },
      json: { model: "claude-test", input: "What is my PIN?", previous_response_id: mine.id }
    })
    expectError(refused, 400, "previous_response_not_found")
    expect(await gw.counts()).toEqual(before)
    expect(up.requests).toHaveLength(1)
    // Still there for its owner.
    expect((await claude("state-owner").responses.retrieve(mine.id)).output_text).toBe("Secret kept.")
  })

  it("does not keep a response sent with store: false", async () => {
    const client = claude("state-unstored")
    says("Not kept.")
    const answer = await client.responses.create({ model: "claude-test", input: "Forget this.", store: false })
    expect((answer as unknown as { store: boolean }).store).toBe(false)
    await expect(client.responses.retrieve(answer.id)).rejects.toMatchObject({ status: 404 })
    const continued = await gw.request("POST", "/v1/responses", {
      headers: { "x-service-id": "state-unstored", "x-upstream-provider": "anthropic" },
      json: { model: "claude-test", input: "And now?", previous_response_id: answer.id }
    })
    expectError(continued, 400, "previous_response_not_found")
  })

  it("exports the stored responses with their profile, and erases them with it", async () => {
    says("Stored.")
    const kept = await claude("state-erased").responses.create({ model: "claude-test", input: "Keep this." })
    const exported = await gw.request<{ responses: Array<{ id: string; inputItems: unknown; response: unknown }> }>(
      "GET",
      "/api/profiles/state-erased/export"
    )
    expect(exported.body.responses).toMatchObject([
      {
        id: kept.id,
        inputItems: [{ role: "user", content: "Keep this." }],
        response: { id: kept.id, output: [{ type: "message" }] }
      }
    ])
    const count = async () =>
      (
        await gw.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM stored_responses r JOIN profiles p ON p.id = r.profile_id WHERE p.external_id = 'state-erased'"
        )
      )[0]!.n
    expect(await count()).toBe(1)
    expect((await gw.request("DELETE", "/api/profiles/state-erased")).status).toBe(200)
    const [left] = await gw.query<{ n: number }>("SELECT count(*)::int AS n FROM stored_responses")
    expect(left!.n).toBeGreaterThan(0)
    expect(await count()).toBe(0)
  })
})

describe("Conversations kept by the gateway (Anthropic behind it)", () => {
  it("creates a conversation, continues it with responses, lists, reads and deletes its items", async () => {
    const client = claude("conv-owner")
    const conversation = await client.conversations.create({
      items: [{ type: "message", role: "user", content: "I live in Porto." }],
      metadata: { topic: "home" }
    })
    expect(conversation).toMatchObject({ object: "conversation", metadata: { topic: "home" } })
    expect(conversation.id).toMatch(/^conv_/)

    says("Porto is lovely.")
    const first = await client.responses.create({
      model: "claude-test",
      input: "Tell me about it.",
      conversation: conversation.id
    })
    expect((first as unknown as { conversation: { id: string } }).conversation).toEqual({ id: conversation.id })
    says("You live in Porto.")
    await client.responses.create({
      model: "claude-test",
      input: "Where do I live?",
      conversation: { id: conversation.id }
    })
    expect(conversationSent(1)).toEqual([
      // Anthropic takes turns in alternation: the two user items are one turn.
      "user: I live in Porto. + Tell me about it.",
      "assistant: Porto is lovely.",
      "user: Where do I live?"
    ])

    const items = await client.conversations.items.list(conversation.id, { order: "asc" })
    // As OpenAI lists them: a message's text in parts, input_text from the user, output_text from the model.
    expect(items.data.map(textParts)).toEqual([
      [["input_text", "I live in Porto."]],
      [["input_text", "Tell me about it."]],
      [["output_text", "Porto is lovely."]],
      [["input_text", "Where do I live?"]],
      [["output_text", "You live in Porto."]]
    ])
    for (const item of items.data)
      expect(item).toMatchObject({ id: expect.stringMatching(/^msg_/), type: "message", status: "completed" })
    const added = await client.conversations.items.create(conversation.id, {
      items: [{ type: "message", role: "user", content: "Also, I have a cat." }]
    })
    expect(added.data.map(textParts)).toEqual([[["input_text", "Also, I have a cat."]]])
    const itemId = (added.data[0] as { id: string }).id
    expect(textParts(await client.conversations.items.retrieve(itemId, { conversation_id: conversation.id }))).toEqual([
      ["input_text", "Also, I have a cat."]
    ])
    // An item sent again with its id is not added twice.
    await client.conversations.items.create(conversation.id, { items: [added.data[0] as never] })
    expect((await client.conversations.items.list(conversation.id)).data).toHaveLength(6)
    await client.conversations.items.delete(itemId, { conversation_id: conversation.id })
    expect((await client.conversations.items.list(conversation.id)).data).toHaveLength(5)

    const updated = await client.conversations.update(conversation.id, { metadata: { topic: "city" } })
    expect(updated.metadata).toEqual({ topic: "city" })
    expect(await client.conversations.delete(conversation.id)).toMatchObject({ id: conversation.id, deleted: true })
    await expect(client.conversations.retrieve(conversation.id)).rejects.toMatchObject({ status: 404 })
  })

  it("keeps a conversation to its user", async () => {
    const conversation = await claude("conv-alice").conversations.create({
      items: [{ type: "message", role: "user", content: "My diary." }]
    })
    // Part of Alice's profile: in her export.
    const exported = await gw.request<{ conversations: Array<{ id: string; items: Array<unknown> }> }>(
      "GET",
      "/api/profiles/conv-alice/export"
    )
    // Its items as the Conversations API lists them.
    expect(exported.body.conversations).toMatchObject([
      {
        id: conversation.id,
        items: [
          {
            id: expect.stringMatching(/^msg_/),
            type: "message",
            role: "user",
            status: "completed",
            content: [{ type: "input_text", text: "My diary." }]
          }
        ]
      }
    ])
    const mallory = claude("conv-mallory")
    await expect(mallory.conversations.retrieve(conversation.id)).rejects.toMatchObject({ status: 404 })
    await expect(mallory.conversations.items.list(conversation.id)).rejects.toMatchObject({ status: 404 })
    const refused = await gw.request("POST", "/v1/responses", {
      headers: { "x-service-id": "conv-mallory", "x-upstream-provider": "anthropic" },
      json: { model: "claude-test", input: "Hi", conversation: conversation.id }
    })
    expectError(refused, 400, "conversation_not_found")
    expect(up.requests).toHaveLength(0)
  })

  it("refuses what cannot be: no user, previous_response_id with a conversation, bad items", async () => {
    const anonymous = await gw.request("POST", "/v1/conversations", {
      headers: { "x-upstream-provider": "anthropic" },
      json: {}
    })
    expectError(anonymous, 400, "missing_user_id")
    const both = await gw.request("POST", "/v1/responses", {
      headers: { "x-service-id": "conv-both", "x-upstream-provider": "anthropic" },
      json: { model: "claude-test", input: "Hi", conversation: "conv_1", previous_response_id: "resp_1" }
    })
    expectError(both, 400, "conflicting_parameters")
    const tooMany = await gw.request("POST", "/v1/conversations", {
      headers: { "x-service-id": "conv-both", "x-upstream-provider": "anthropic" },
      json: { items: Array.from({ length: 21 }, () => ({ type: "message", role: "user", content: "x" })) }
    })
    expectError(tooMany, 400, "invalid_request")
    const objectId = await gw.request("POST", "/v1/conversations", {
      headers: { "x-service-id": "conv-both", "x-upstream-provider": "anthropic" },
      json: { items: [{ id: { nested: true }, type: "message", role: "user", content: "x" }] }
    })
    expectError(objectId, 400, "invalid_request")
    const numberId = await gw.request("POST", "/v1/responses", {
      headers: { "x-service-id": "conv-both", "x-upstream-provider": "anthropic" },
      json: { model: "claude-test", input: [{ id: 5, role: "user", content: "x" }], conversation: "conv_1" }
    })
    expectError(numberId, 400, "invalid_item_id")
    expect(up.requests).toHaveLength(0)
  })
})

describe("Responses API state kept by an OpenAI-compatible provider (passthrough, the default)", () => {
  const answerIds = async (user: string) =>
    (
      await gw.query<{ answer_id: string }>(
        `SELECT m.answer_id FROM messages m JOIN profiles p ON p.id = m.profile_id
         WHERE p.external_id = $1 AND m.role = 'assistant' ORDER BY m.created_at`,
        [user]
      )
    ).map((row) => row.answer_id)

  it("records the provider's response id with the turn, and forwards the state fields untouched", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: {
        id: "resp_provider2",
        object: "response",
        status: "completed",
        model: "gpt-test",
        output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "Hi." }] }]
      }
    })
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "state-passthrough" }
    })
    await client.responses.create({
      model: "gpt-test",
      input: "Hello",
      previous_response_id: "resp_provider1",
      store: true
    })
    expect(up.requests[0]!.body).toMatchObject({ previous_response_id: "resp_provider1", store: true })
    expect(await answerIds("state-passthrough")).toEqual(["resp_provider2"])
  })

  it("records nothing for a background response, which has no answer yet", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: { id: "resp_queued", object: "response", status: "queued", model: "gpt-test", output: [] }
    })
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "state-background" }
    })
    const queued = await client.responses.create({ model: "gpt-test", input: "Take your time", background: true })
    expect(queued.status).toBe("queued")
    expect(up.requests[0]!.body).toMatchObject({ background: true })
    // A whole answer is recorded before it is sent: by now a turn would be there.
    expect(await answerIds("state-background")).toEqual([])
  })

  it("passes the Conversations API to the provider", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: { id: "conv_provider", object: "conversation", created_at: 1, metadata: {} }
    })
    const client = new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 })
    const created = await client.conversations.create({})
    expect(created.id).toBe("conv_provider")
    expect(up.requests[0]).toMatchObject({ method: "POST", path: "/v1/conversations" })
  })

  it("asks the provider for a response it does not keep itself", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: { id: "resp_provider1", object: "response", status: "completed", model: "gpt-test", output: [] }
    })
    const client = new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 })
    const found = await client.responses.retrieve("resp_provider1")
    expect(found.id).toBe("resp_provider1")
    expect(up.requests[0]).toMatchObject({ method: "GET", path: "/v1/responses/resp_provider1" })
  })
})

describe("UPSTREAM_RESPONSES_STATE=gateway with an OpenAI-compatible provider", () => {
  let stateful: TestGateway
  beforeAll(async () => {
    stateful = await startGateway(
      { UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-upstream-state", UPSTREAM_RESPONSES_STATE: "gateway" },
      { databaseUrl: gw.databaseUrl }
    )
  })
  afterAll(() => stateful.close())

  it("asks the provider to keep nothing and sends it the whole conversation", async () => {
    const client = new OpenAI({
      baseURL: `${stateful.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "state-native" }
    })
    up.enqueue({ kind: "json", status: 200, body: nativeResponse("resp_native1", "Hi Bo.") })
    const first = await client.responses.create({ model: "gpt-test", input: "I am Bo." })
    expect(up.requests[0]!.body).toMatchObject({ store: false, input: "I am Bo." })

    up.enqueue({ kind: "json", status: 200, body: nativeResponse("resp_native2", "You are Bo.") })
    await client.responses.create({ model: "gpt-test", input: "Who am I?", previous_response_id: first.id })
    const sent = up.requests[1]!.body as Record<string, unknown>
    expect(sent["previous_response_id"]).toBeUndefined()
    expect(sent["store"]).toBe(false)
    expect(sent["input"]).toMatchObject([
      { role: "user", content: "I am Bo." },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hi Bo." }] },
      { role: "user", content: "Who am I?" }
    ])
    expect((await client.responses.retrieve("resp_native2")).output_text).toBe("You are Bo.")
    expect(up.requests).toHaveLength(2)
  })

  it("sends a conversation's items as they were sent, and lists them with the ids it gave them", async () => {
    const client = new OpenAI({
      baseURL: `${stateful.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "state-items" }
    })
    const conversation = await client.conversations.create({
      items: [{ role: "user", content: "I am Cy." }, { id: null, role: "user", content: "I bake." } as never]
    })
    up.enqueue({ kind: "json", status: 200, body: nativeResponse("resp_items1", "Hi Cy.") })
    await client.responses.create({ model: "gpt-test", input: "Hello.", conversation: conversation.id })
    up.enqueue({ kind: "json", status: 200, body: nativeResponse("resp_items2", "You bake.") })
    await client.responses.create({ model: "gpt-test", input: "What do I do?", conversation: conversation.id })
    const [first, second] = up.requests.map((request) => request.body!["input"] as Array<unknown>)
    // The second request starts with the first one's items, byte for byte: nothing added to them.
    expect(JSON.stringify(second!.slice(0, 3))).toBe(JSON.stringify(first!.slice(0, 3)))
    expect(second!.slice(0, 3)).toEqual([
      { role: "user", content: "I am Cy." },
      { id: null, role: "user", content: "I bake." },
      { type: "message", role: "user", content: "Hello." }
    ])
    const listed = await client.conversations.items.list(conversation.id, { order: "asc" })
    expect(listed.data.slice(0, 4)).toEqual([
      ...["I am Cy.", "I bake.", "Hello."].map((text) => ({
        id: expect.stringMatching(/^msg_[0-9a-f]{48}$/),
        type: "message",
        role: "user",
        status: "completed",
        content: [{ type: "input_text", text }]
      })),
      nativeResponse("resp_items1", "Hi Cy.").output[0]
    ])
    // Listing changes nothing of what the provider gets next.
    up.enqueue({ kind: "json", status: 200, body: nativeResponse("resp_items3", "Bread.") })
    await client.responses.create({ model: "gpt-test", input: "Again?", conversation: conversation.id })
    expect(JSON.stringify((up.requests[2]!.body!["input"] as Array<unknown>).slice(0, 3))).toBe(
      JSON.stringify(first!.slice(0, 3))
    )
  })
})
