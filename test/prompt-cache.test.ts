import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicMessage } from "./support/anthropicWire.ts"
import { completion, type FakeUpstream, type RecordedRequest, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { nativeResponse } from "./support/responsesWire.ts"

/**
 * The provider's prompt cache through the gateway (issue 39): the app's own items reach the provider
 * unchanged and in order, the turn's context goes at the tail, and each earlier turn's context goes
 * back where it was — so every request starts with exactly the previous request.
 */

let up: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway
let replica: TestGateway

const env = () => ({
  UPSTREAM_BASE_URL: up.url,
  UPSTREAM_API_KEY: "sk-upstream-prompt-cache",
  ANTHROPIC_BASE_URL: anthropic.url,
  ANTHROPIC_API_KEY: "sk-ant-prompt-cache",
  RATE_LIMIT_API_PER_MINUTE: "0",
  CONTEXT_CACHE_FENCE_MS: "0"
})

beforeAll(async () => {
  up = await startFakeUpstream()
  anthropic = await startFakeUpstream()
  gw = await startGateway(env())
  replica = await startGateway(env(), { databaseUrl: gw.databaseUrl })
})
afterAll(async () => {
  await replica.close()
  await gw.close()
  await anthropic.close()
  await up.close()
})
beforeEach(() => {
  up.reset()
  anthropic.reset()
})

const SYSTEM = "You are a friendly assistant for a cooking app. Answer in two sentences."

/** More than `INJECTION_MAX_MEMORIES`, so memories are ranked for each message rather than all sent. */
const OTHERS = [
  "Works as a night-shift nurse",
  "Is learning Portuguese",
  "Drives an old red Volvo",
  "Reads science fiction on the train",
  "Is saving for a trip to Japan",
  "Has a sister in Toronto",
  "Runs five kilometres on Sundays",
  "Collects vinyl records of jazz pianists"
]

/** A user whose profile knows these memories (and others), and their name. */
const userWith = async (on: TestGateway, id: string, memories: ReadonlyArray<string>) => {
  await on.request("POST", "/api/profiles", { json: { externalId: id } })
  await on.request("PUT", `/api/profiles/${id}/traits/name`, { json: { value: "Ada" } })
  await on.request("POST", `/api/profiles/${id}/memories/import`, {
    json: { memories: [...memories, ...OTHERS].map((content) => ({ content, type: "fact" })) }
  })
}

const chat = (on: TestGateway, user: string) =>
  new OpenAI({ baseURL: `${on.baseUrl}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { "X-Service-Id": user } })

type Message = { role: "system" | "user" | "assistant"; content: string }

/** Plays a conversation through the gateways in turn (the answers come from the fake provider), and what each request sent. */
const converse = async (user: string, questions: ReadonlyArray<string>, through: ReadonlyArray<TestGateway> = [gw]) => {
  const history: Array<Message> = [{ role: "system", content: SYSTEM }]
  const sent: Array<ReadonlyArray<unknown>> = []
  for (const [turn, question] of questions.entries()) {
    history.push({ role: "user", content: question })
    up.enqueue({ kind: "json", status: 200, body: completion({ content: `Answer ${turn} about ${question}` }) })
    const answer = await chat(through[turn % through.length]!, user).chat.completions.create({
      model: "gpt-test",
      messages: history
    })
    sent.push(up.requests.at(-1)!.body!["messages"] as ReadonlyArray<unknown>)
    history.push({ role: "assistant", content: answer.choices[0]!.message.content! })
  }
  return sent
}

const MEMORIES = [
  "Has a golden retriever named Biscuit",
  "Is allergic to shellfish",
  "Plays the cello in a community orchestra",
  "Grows tomatoes on a balcony in Lisbon"
]
const QUESTIONS = [
  "What treats can I make for my golden retriever?",
  "Which seafood dishes should I avoid given my allergy to shellfish?",
  "Any quick dinners before my cello orchestra rehearsal?",
  "What can I cook with the tomatoes from my balcony?"
]

describe("Chat Completions", () => {
  it("sends each turn's request starting with the previous request: earlier blocks back where they were", async () => {
    await userWith(gw, "cache-chat", MEMORIES)
    const sent = await converse("cache-chat", QUESTIONS)
    for (let turn = 1; turn < sent.length; turn++) {
      expect(sent[turn]!.slice(0, sent[turn - 1]!.length)).toEqual(sent[turn - 1])
    }
    // The app's own messages are there unchanged and in order, with one block after each question.
    const last = sent.at(-1)! as ReadonlyArray<Message>
    const own = last.filter((message) => !message.content.includes("<user_profile>"))
    expect(own[0]).toEqual({ role: "system", content: SYSTEM })
    expect(own.filter((message) => message.role === "user").map((message) => message.content)).toEqual(QUESTIONS)
    expect(last.length - own.length).toBe(QUESTIONS.length)
  })

  it("never repeats what an earlier block said, and brings each turn's memory on its turn", async () => {
    await userWith(gw, "cache-dedupe", MEMORIES)
    const sent = await converse("cache-dedupe", QUESTIONS)
    const last = JSON.stringify(sent.at(-1))
    expect(last.split("Name: Ada")).toHaveLength(2)
    for (const [turn, memory] of MEMORIES.entries()) {
      expect(JSON.stringify(sent[turn])).toContain(memory)
      expect(last.split(memory)).toHaveLength(2)
    }
  })

  it("puts every memory chosen for a turn in that turn's request, in its block or an earlier one it carries", async () => {
    const topics = [...MEMORIES, ...OTHERS]
    await userWith(gw, "cache-quality", MEMORIES)
    const { body } = await gw.request<{ memories: Array<{ id: string; content: string }> }>(
      "GET",
      "/api/profiles/cache-quality/memories?limit=50"
    )
    const contentOf = new Map(body.memories.map((memory) => [memory.id, memory.content]))
    const questions = [
      ...QUESTIONS,
      "I start a night shift as a nurse tomorrow: what should I pack to eat?",
      "Give me Portuguese names for three dishes I am learning to cook",
      "What snacks keep well in my old Volvo on a road trip?",
      "Something to eat while I read science fiction on the train?",
      "How can I cook cheaply while saving for my trip to Japan?",
      "What could I bake for my sister in Toronto?",
      "What should I eat before my Sunday five kilometre run?",
      "A dinner to go with my jazz piano vinyl records tonight?"
    ]
    const history: Array<Message> = [{ role: "system", content: SYSTEM }]
    for (const [turn, question] of questions.entries()) {
      history.push({ role: "user", content: question })
      const { data, response } = await chat(gw, "cache-quality")
        .chat.completions.create({ model: "gpt-test", messages: history })
        .withResponse()
      const sent = JSON.stringify(up.requests.at(-1)!.body)
      const chosen = (JSON.parse(response.headers.get("x-service-context")!) as { memories: Array<string> }).memories
      for (const id of chosen) expect(sent, question).toContain(contentOf.get(id))
      // The memory the message is about is among them.
      expect(
        chosen.map((id) => contentOf.get(id)),
        question
      ).toContain(topics[turn])
      history.push({ role: "assistant", content: data.choices[0]!.message.content! })
    }
  })

  it("keeps a thread's prefix too: the restored turns and their blocks are the same bytes turn after turn", async () => {
    await userWith(gw, "cache-thread", MEMORIES)
    const sent: Array<ReadonlyArray<unknown>> = []
    for (const question of QUESTIONS) {
      await chat(gw, "cache-thread").chat.completions.create(
        {
          model: "gpt-test",
          messages: [
            { role: "system", content: SYSTEM },
            { role: "user", content: question }
          ]
        },
        { headers: { "X-Service-Thread-Id": "dinners" } }
      )
      sent.push(up.requests.at(-1)!.body!["messages"] as ReadonlyArray<unknown>)
    }
    for (let turn = 1; turn < sent.length; turn++) {
      expect(sent[turn]!.slice(0, sent[turn - 1]!.length)).toEqual(sent[turn - 1])
    }
    for (const [turn, memory] of MEMORIES.entries()) expect(JSON.stringify(sent[turn])).toContain(memory)
  })

  it("finds an earlier turn's block on another replica at once (it is written with its turn)", async () => {
    await userWith(gw, "cache-replicas", MEMORIES)
    const sent = await converse("cache-replicas", QUESTIONS, [gw, replica])
    for (let turn = 1; turn < sent.length; turn++) {
      expect(sent[turn]!.slice(0, sent[turn - 1]!.length)).toEqual(sent[turn - 1])
    }
  })

  it.each([
    ["lost a memory", "cache-forget", { method: "DELETE" as const }],
    [
      "had a memory rewritten",
      "cache-rewrite",
      { method: "PATCH" as const, json: { content: "Has a golden retriever" } }
    ]
  ])(
    "never sends a kept block again once the profile %s: the next block comes fresh at the tail",
    async (_, user, change) => {
      await userWith(gw, user, MEMORIES)
      const [first] = await converse(user, QUESTIONS.slice(0, 1))
      const { body } = await gw.request<{ memories: Array<{ id: string; content: string }> }>(
        "GET",
        `/api/profiles/${user}/memories?limit=50`
      )
      const dog = body.memories.find((memory) => memory.content.includes("Biscuit"))!
      const { method, ...options } = change
      expect((await gw.request(method, `/api/profiles/${user}/memories/${dog.id}`, options)).status).toBe(200)
      const history: Array<Message> = [
        { role: "system", content: SYSTEM },
        { role: "user", content: QUESTIONS[0]! },
        { role: "assistant", content: "Answer 0" },
        { role: "user", content: QUESTIONS[2]! }
      ]
      const { response } = await chat(gw, user)
        .chat.completions.create({ model: "gpt-test", messages: history })
        .withResponse()
      const sent = JSON.stringify(up.requests.at(-1)!.body)
      expect(JSON.stringify(first)).toContain("Biscuit")
      expect(sent).not.toContain("Biscuit")
      expect(sent).toContain("cello")
      expect(JSON.parse(response.headers.get("x-service-context")!)).toMatchObject({ keptBlocks: 0 })
    }
  )

  it("keeps today's placement for a request that asks for it (service.injectionPlacement: system)", async () => {
    await userWith(gw, "cache-legacy", MEMORIES)
    const response = await gw.request("POST", "/v1/chat/completions", {
      json: {
        model: "gpt-test",
        messages: [
          { role: "system", content: SYSTEM },
          { role: "user", content: QUESTIONS[1] }
        ],
        service: { injectionPlacement: "system" }
      },
      headers: { "x-service-id": "cache-legacy" }
    })
    const [system, question] = up.requests.at(-1)!.body!["messages"] as Array<Message>
    expect(system!.content.startsWith(`${SYSTEM}\n\n`)).toBe(true)
    expect(system!.content).toContain("shellfish")
    expect(question).toEqual({ role: "user", content: QUESTIONS[1] })
    expect(JSON.parse(response.headers.get("x-service-context")!)).toMatchObject({ placement: "system" })
  })
})

describe("the Responses API with the state the gateway keeps", () => {
  let stateful: TestGateway
  beforeAll(async () => {
    stateful = await startGateway({ ...env(), UPSTREAM_RESPONSES_STATE: "gateway" }, { databaseUrl: gw.databaseUrl })
  })
  afterAll(() => stateful.close())

  let responseCount = 0
  const native = (request: RecordedRequest) =>
    nativeResponse(
      `resp_cache_${++responseCount}`,
      `Noted (${JSON.stringify(request.body?.["input"]).length})`,
      `msg_cache_${responseCount}`
    )

  it("rebuilds previous_response_id's conversation with each turn's block where it was", async () => {
    await userWith(stateful, "cache-responses", MEMORIES)
    up.handler = (request) => ({ kind: "json", status: 200, body: native(request) })
    const client = new OpenAI({
      baseURL: `${stateful.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "cache-responses" }
    })
    let previous: string | undefined
    const inputs: Array<ReadonlyArray<unknown>> = []
    for (const question of QUESTIONS) {
      const answer = await client.responses.create({
        model: "gpt-test",
        instructions: SYSTEM,
        input: question,
        ...(previous === undefined ? {} : { previous_response_id: previous })
      })
      previous = answer.id
      const body = up.requests.at(-1)!.body!
      expect(body["instructions"]).toBe(SYSTEM)
      inputs.push(body["input"] as ReadonlyArray<unknown>)
    }
    for (let turn = 1; turn < inputs.length; turn++) {
      expect(inputs[turn]!.slice(0, inputs[turn - 1]!.length)).toEqual(inputs[turn - 1])
    }
    for (const [turn, memory] of MEMORIES.entries()) expect(JSON.stringify(inputs[turn])).toContain(memory)
  })
})

describe("Anthropic Messages with INJECTION_CACHE_CONTROL=auto", () => {
  let auto: TestGateway
  beforeAll(async () => {
    auto = await startGateway({ ...env(), INJECTION_CACHE_CONTROL: "auto" }, { databaseUrl: gw.databaseUrl })
  })
  afterAll(() => auto.close())

  const claude = (user: string) =>
    new Anthropic({ baseURL: auto.baseUrl, apiKey: "unused", maxRetries: 0, defaultHeaders: { "X-Service-Id": user } })

  it("marks the end of what repeats with one breakpoint, the block after it", async () => {
    await userWith(auto, "cache-anthropic", MEMORIES)
    const history: Array<{ role: "user" | "assistant"; content: string }> = []
    const sent: Array<Record<string, unknown>> = []
    for (const question of QUESTIONS.slice(0, 3)) {
      history.push({ role: "user", content: question })
      anthropic.enqueue({
        kind: "json",
        status: 200,
        body: anthropicMessage([{ type: "text", text: `On ${question}` }])
      })
      const answer = await claude("cache-anthropic").messages.create({
        model: "claude-test",
        max_tokens: 100,
        system: SYSTEM,
        messages: history
      })
      sent.push(anthropic.requests.at(-1)!.body!)
      history.push({ role: "assistant", content: (answer.content[0] as { text: string }).text })
    }
    const last = sent.at(-1)!
    const messages = last["messages"] as Array<{ role: string; content: unknown }>
    expect(last["system"]).toBe(SYSTEM)
    expect(JSON.stringify(last).split("cache_control")).toHaveLength(2)
    // The breakpoint is on the latest question; only the turn's new block comes after it.
    const marked = messages.findIndex((message) => JSON.stringify(message).includes("cache_control"))
    expect(JSON.stringify(messages[marked])).toContain(QUESTIONS[2])
    expect(messages.slice(marked + 1)).toHaveLength(1)
    expect(injectedText({ messages: messages.slice(marked + 1) })).toContain("cello")
  })

  it("leaves a request's own breakpoints alone", async () => {
    await userWith(auto, "cache-anthropic-own", MEMORIES)
    anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "ok" }]) })
    const system = [{ type: "text" as const, text: SYSTEM, cache_control: { type: "ephemeral" as const } }]
    await claude("cache-anthropic-own").messages.create({
      model: "claude-test",
      max_tokens: 100,
      system,
      messages: [{ role: "user", content: QUESTIONS[3]! }]
    })
    const body = anthropic.requests.at(-1)!.body!
    expect(body["system"]).toEqual(system)
    expect(JSON.stringify(body).split("cache_control")).toHaveLength(2)
  })
})

describe("INJECTION_PROMPT_CACHE_KEY=user", () => {
  let keyed: TestGateway
  beforeAll(async () => {
    keyed = await startGateway({ ...env(), INJECTION_PROMPT_CACHE_KEY: "user" }, { databaseUrl: gw.databaseUrl })
  })
  afterAll(() => keyed.close())

  it("keys each user's OpenAI requests to one cache, and leaves an app's own key as it is", async () => {
    const keyOf = async (user: string, body: Record<string, unknown> = {}) => {
      await keyed.request("POST", "/v1/chat/completions", {
        json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }], ...body },
        headers: { "x-service-id": user }
      })
      return up.requests.at(-1)!.body!["prompt_cache_key"]
    }
    const alice = await keyOf("cache-key-alice")
    expect(alice).toMatch(/^pmg-[0-9a-f]{32}$/)
    expect(await keyOf("cache-key-alice")).toBe(alice)
    expect(await keyOf("cache-key-bob")).not.toBe(alice)
    expect(await keyOf("cache-key-alice", { prompt_cache_key: "app-own" })).toBe("app-own")
  })
})
