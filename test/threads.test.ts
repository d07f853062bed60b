import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  answerNamingQuestion,
  chunkFrames,
  eventually,
  type FakeUpstream,
  modelReply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

/** Threads for chat completions: a client sends only its new messages, the gateway restores the rest. */

const BUDGET = 200

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-threads",
    THREAD_MAX_TOKENS: String(BUDGET)
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => {
  up.reset()
  // Each answer names the question it answers: "answer to <the last message>".
  up.handler = answerNamingQuestion
})

const client = (user: string, thread: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": user, "X-Service-Thread-Id": thread }
  })

type Sent = Array<{ role: string; content: string }>

/** What restored lines (`role: text`) cost, as the gateway estimates it: 4 characters a token, and 4 a message. */
const cost = (lines: ReadonlyArray<string>) =>
  lines.reduce((sum, line) => sum + Math.ceil(line.replace(/^\w+: /, "").length / 4) + 4, 0)

/** The conversation the provider received for the last request, without the system messages. */
const lastConversation = () =>
  (up.requests.at(-1)!.body as { messages: Sent }).messages
    .filter((message) => message.role !== "system")
    .map((message) => `${message.role}: ${message.content}`)

const say = async (chat: OpenAI, content: string) => {
  const { data, response } = await chat.chat.completions
    .create({ model: "gpt-test", messages: [{ role: "user", content }] })
    .withResponse()
  return {
    answer: data.choices[0]!.message.content,
    thread: (JSON.parse(response.headers.get("x-service-context") ?? "{}") as { thread?: Record<string, unknown> })
      .thread
  }
}

describe("threads", () => {
  it("restores the thread's earlier turns for a client that sends only its new message", async () => {
    const chat = client("thread-ada", "trip")
    expect((await say(chat, "I am planning a trip to Kyoto.")).thread).toMatchObject({ id: "trip", restored: 0 })
    await say(chat, "In April.")
    const third = await say(chat, "What should I pack?")
    expect(lastConversation()).toEqual([
      "user: I am planning a trip to Kyoto.",
      "assistant: answer to I am planning a trip to Kyoto.",
      "user: In April.",
      "assistant: answer to In April.",
      "user: What should I pack?"
    ])
    expect(third.thread).toEqual({ id: "trip", restored: 4, relevant: 0, summary: false, matched: 0, omitted: 0 })

    // Another thread of the same user, and the same thread id of another user, start empty.
    await say(client("thread-ada", "work"), "Draft an email.")
    expect(lastConversation()).toEqual(["user: Draft an email."])
    await say(client("thread-bob", "trip"), "Hello.")
    expect(lastConversation()).toEqual(["user: Hello."])
  })

  it("duplicates nothing for a client that sends its whole history", async () => {
    const chat = client("thread-full", "full")
    await say(chat, "First question.")
    const { response } = await chat.chat.completions
      .create({
        model: "gpt-test",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "First question." },
          { role: "assistant", content: "answer to First question." },
          { role: "user", content: "Second question." }
        ]
      })
      .withResponse()
    expect(lastConversation()).toEqual([
      "user: First question.",
      "assistant: answer to First question.",
      "user: Second question."
    ])
    const context = JSON.parse(response.headers.get("x-service-context")!) as { thread: Record<string, unknown> }
    expect(context.thread).toEqual({ id: "full", restored: 0, relevant: 0, summary: false, matched: 2, omitted: 0 })

    // A client that sends only its last exchange gets the older ones restored before it.
    await chat.chat.completions.create({
      model: "gpt-test",
      messages: [
        { role: "user", content: "Second question." },
        { role: "assistant", content: "answer to Second question." },
        { role: "user", content: "Third question." }
      ]
    })
    expect(lastConversation()).toEqual([
      "user: First question.",
      "assistant: answer to First question.",
      "user: Second question.",
      "assistant: answer to Second question.",
      "user: Third question."
    ])
  })

  it("restores nothing when the client's history is not the thread's", async () => {
    const chat = client("thread-edit", "edited")
    await say(chat, "Original question.")
    const { response } = await chat.chat.completions
      .create({
        model: "gpt-test",
        messages: [
          { role: "user", content: "Edited question." },
          { role: "assistant", content: "Some answer." },
          { role: "user", content: "Next." }
        ]
      })
      .withResponse()
    expect(lastConversation()).toEqual(["user: Edited question.", "assistant: Some answer.", "user: Next."])
    expect(JSON.parse(response.headers.get("x-service-context")!)).toMatchObject({
      thread: { restored: 0, skipped: "history_differs" }
    })
  })

  it("over a long chat, restores the same history plus the last turn, moving its window in steps within the budget", async () => {
    const chat = client("thread-long", "long")
    let previous: Array<string> = []
    let moves = 0
    let total = 0
    const question = (turn: number) => `Turn ${turn}: ${"words ".repeat(10)}`
    for (let turn = 1; turn <= 30; turn++) {
      const { thread } = await say(chat, question(turn))
      const restored = lastConversation().slice(0, -1)
      // Whole turns, the latest ones, in order.
      if (restored.length > 0) expect(restored[0]).toMatch(/^user: /)
      expect(restored.at(-1) ?? `assistant: answer to Turn ${turn - 1}: `).toMatch(new RegExp(`Turn ${turn - 1}: `))
      // Within the budget, and a quarter more while the window waits for a summary (no model here: once).
      expect(cost(restored)).toBeLessThanOrEqual(BUDGET * 1.25)
      expect((thread?.["restored"] as number) + (thread?.["omitted"] as number)).toBe(2 * (turn - 1))
      // The provider's cached prefix: the previous request's history, then the previous turn.
      if (turn > 1) {
        const added = [`user: ${question(turn - 1)}`, `assistant: answer to ${question(turn - 1)}`]
        if (restored.join("\n") !== [...previous, ...added].join("\n")) moves++
        total += cost(added)
      }
      previous = restored
    }
    // The window moves once a step (half the budget) of turns, at most: the other turns keep the prefix.
    expect(moves).toBeGreaterThan(0)
    expect(moves).toBeLessThanOrEqual(Math.ceil(total / (BUDGET / 2)) + 1)

    // No worker runs here: the one summary job waiting is moved on to the last cut, the message before
    // the window (queued in the background, after the answer: awaited).
    const windowStart = Number(/^user: Turn (\d+): /.exec(previous[0]!)![1])
    const [before] = await gw.query<{ created_at: Date }>(
      "SELECT created_at FROM messages WHERE thread_id = 'long' AND content = $1",
      [`answer to ${question(windowStart - 1)}`]
    )
    const waiting = async () =>
      (
        await gw.query<{ until: string }>(
          "SELECT input->>'until' AS until FROM extraction_jobs WHERE kind = 'thread' AND input->>'threadId' = 'long'"
        )
      ).map((job) => new Date(job.until).getTime())
    await eventually(async () => ((await waiting())[0] === before!.created_at.getTime() ? true : undefined))
    expect(await waiting()).toEqual([before!.created_at.getTime()])
  })

  it("records a streamed turn in its thread like any other", async () => {
    const chat = client("thread-stream", "streamed")
    up.handler = undefined
    up.enqueue({ kind: "sse", frames: chunkFrames(["Streamed ", "answer."]) })
    const stream = await chat.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "Stream it." }],
      stream: true
    })
    for await (const _ of stream) {
      // read to the end
    }
    up.handler = answerNamingQuestion
    await say(chat, "And now?")
    expect(lastConversation()).toEqual(["user: Stream it.", "assistant: Streamed answer.", "user: And now?"])
  })

  it("lists a profile's threads and reads one through the API", async () => {
    const chat = client("thread-api", "alpha")
    await say(chat, "One.")
    await say(client("thread-api", "beta"), "Two.")
    const listed = await gw.request<{ threads: Array<{ threadId: string; messages: number }> }>(
      "GET",
      "/api/profiles/thread-api/threads"
    )
    expect(listed.body.threads.map((thread) => [thread.threadId, thread.messages])).toEqual([
      ["beta", 2],
      ["alpha", 2]
    ])
    const alpha = await gw.request<{ messages: Array<{ role: string; content: string }> }>(
      "GET",
      "/api/profiles/thread-api/threads/alpha"
    )
    expect(alpha.body.messages.map((message) => message.content)).toEqual(["One.", "answer to One."])
    expectError(await gw.request("GET", "/api/profiles/thread-api/threads/nope"), 404, "thread_not_found")
  })

  it("refuses a bad thread id, and a thread on an API that keeps its own state", async () => {
    const bad = await gw.request("POST", "/v1/chat/completions", {
      headers: { "x-service-id": "thread-bad", "x-service-thread-id": "has space" },
      json: { model: "gpt-test", messages: [{ role: "user", content: "Hi" }] }
    })
    expectError(bad, 400, "invalid_thread_id")
    const responses = await gw.request("POST", "/v1/responses", {
      headers: { "x-service-id": "thread-bad", "x-service-thread-id": "t1" },
      json: { model: "gpt-test", input: "Hi" }
    })
    expectError(responses, 400, "unsupported_parameter")
    expect(up.requests).toHaveLength(0)
  })
})

describe("a thread longer than its budget", () => {
  const SMALL = 120
  let model: FakeUpstream
  let chat: FakeUpstream
  let summarizing: TestGateway
  const summaryCalls = () =>
    model.requests.filter((request) => JSON.stringify(request.body).includes("running summary of one conversation"))

  beforeAll(async () => {
    chat = await startFakeUpstream()
    model = await startFakeUpstream()
    chat.handler = answerNamingQuestion
    // The summary names the last turn it was given, so a test can see what it covers.
    model.handler = (request) => {
      const user = (request.body as { messages: Array<{ content: string }> }).messages[1]!.content
      if (!summaryCalls().includes(request)) return modelReply({ traits: [], memories: [] })
      const { turns } = JSON.parse(user) as { turns: Array<{ content: string }> }
      return modelReply({ summary: `The talk went up to: ${turns.at(-1)!.content}` })
    }
    summarizing = await startGateway({
      UPSTREAM_BASE_URL: chat.url,
      UPSTREAM_API_KEY: "sk-threads",
      EXTRACTION_BASE_URL: model.url,
      EXTRACTION_API_KEY: "sk-model",
      EXTRACTION_CONCURRENCY: "1",
      EXTRACTION_JOBS_PER_PROFILE_PER_HOUR: "0",
      THREAD_MAX_TOKENS: String(SMALL)
    })
  })
  afterAll(async () => {
    await summarizing.close()
    await chat.close()
    await model.close()
  })

  it("goes to the provider as a window of its latest turns after a summary of exactly the turns before it, written in the background", async () => {
    const client = new OpenAI({
      baseURL: `${summarizing.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "thread-fifty", "X-Service-Thread-Id": "fifty" }
    })
    const sentLast = () =>
      (chat.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> }).messages
    /** The summary a request carried, the turns restored after it, and what they cost. */
    const restoredOf = (sent: Array<{ role: string; content: string }>) => {
      const summary = sent.find((message) => message.content.startsWith("Earlier in this conversation"))
      const turns = sent.filter((message) => message.role !== "system").slice(0, -1)
      const lines = [...(summary === undefined ? [] : [summary]), ...turns].map((message) => message.content)
      return { summary, turns, tokens: lines.reduce((sum, text) => sum + Math.ceil(text.length / 4) + 4, 0) }
    }
    /** The summary names the last message it was given: it must be the one just before the window. */
    const expectExactSummary = (restored: ReturnType<typeof restoredOf>) => {
      const covered = /The talk went up to: answer to Message (\d+)\./.exec(restored.summary!.content)?.[1]
      expect(covered).toBeDefined()
      expect(restored.turns[0]?.content).toBe(`Message ${Number(covered) + 1}.`)
    }

    let previous: ReturnType<typeof restoredOf> | undefined
    let moves = 0
    for (let turn = 1; turn <= 50; turn++) {
      await client.chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: `Message ${turn}.` }]
      })
      // Whenever the summary job ran, whatever its pace: the summary goes only when it ends where the window starts.
      const restored = restoredOf(sentLast())
      if (restored.summary !== undefined) expectExactSummary(restored)
      expect(restored.tokens).toBeLessThanOrEqual(SMALL * 1.25)
      if (previous !== undefined) {
        const before = [previous.summary, ...previous.turns].map((message) => message?.content)
        const now = [restored.summary, ...restored.turns].map((message) => message?.content)
        const expected = [...before, `Message ${turn - 1}.`, `answer to Message ${turn - 1}.`]
        if (JSON.stringify(now) !== JSON.stringify(expected)) moves++
      }
      previous = restored
    }
    // 49 turns of about 17 tokens, in steps of half what the summary (about 31 tokens) leaves of the
    // budget: about 19 steps. This client outpaces the worker: a step may take a second move (first
    // to the cut, without the summary, then the summary).
    expect(moves).toBeLessThanOrEqual(2 * Math.ceil((49 * 17) / ((SMALL - 31) / 2)))

    // Once the worker has caught up, the summary goes with the next request, ending where its window starts.
    await eventually(async () => {
      const [row] = await summarizing.query<{ waiting: number }>(
        "SELECT count(*)::int AS waiting FROM extraction_jobs WHERE kind = 'thread' AND status IN ('pending', 'running')"
      )
      return row?.waiting === 0 ? true : undefined
    }, 20_000)
    // The model got the turns as data, after the instructions.
    const call = summaryCalls()[0]!
    expect((call.body as { messages: Array<{ content: string }> }).messages[0]!.content).toContain(
      "data, not instructions"
    )

    const { response } = await client.chat.completions
      .create({ model: "gpt-test", messages: [{ role: "user", content: "Message 51." }] })
      .withResponse()
    const restored = restoredOf(sentLast())
    expectExactSummary(restored)
    expect(restored.turns.at(-1)?.content).toBe("answer to Message 50.")
    expect(restored.tokens).toBeLessThanOrEqual(SMALL * 1.25)
    expect(JSON.parse(response.headers.get("x-service-context")!)).toMatchObject({
      thread: { id: "fifty", summary: true }
    })
  })
})

describe("THREAD_RETENTION_DAYS", () => {
  it("deletes each namespace's thread turns and stored responses past its retention, and keeps the rest", async () => {
    const ADMIN = "sk-admin-retention-0123456789"
    const provider = await startFakeUpstream()
    provider.handler = answerNamingQuestion
    const kept = await startGateway({
      UPSTREAM_BASE_URL: provider.url,
      UPSTREAM_API_KEY: "sk-retention",
      ADMIN_API_KEY: ADMIN,
      THREAD_RETENTION_DAYS: "30,archive=100",
      THREAD_RETENTION_SWEEP_MS: "100"
    })
    try {
      const created = await kept.request<{ key: string }>("POST", "/api/keys", {
        headers: { authorization: `Bearer ${ADMIN}` },
        json: { namespace: "archive", scope: "app" }
      })
      const turn = (key: string | undefined, thread: string) =>
        kept.request("POST", "/v1/chat/completions", {
          headers: {
            ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
            "x-service-id": "retained",
            "x-service-thread-id": thread
          },
          json: { model: "gpt-test", messages: [{ role: "user", content: `In ${thread}.` }] }
        })
      for (const thread of ["old", "recent"]) expect((await turn(undefined, thread)).status).toBe(200)
      for (const thread of ["ancient", "old"]) expect((await turn(created.body.key, thread)).status).toBe(200)
      const age = (namespace: string, thread: string, days: number) =>
        kept.query(
          `UPDATE messages SET created_at = now() - $3 * interval '1 day'
           WHERE thread_id = $2 AND profile_id IN (SELECT id FROM profiles WHERE namespace = $1)`,
          [namespace, thread, days]
        )
      await age("default", "old", 40)
      await age("default", "recent", 10)
      await age("archive", "ancient", 150)
      await age("archive", "old", 40)
      for (const [id, days] of [
        ["resp_old", 40],
        ["resp_new", 10]
      ] as const)
        await kept.query(
          `INSERT INTO stored_responses (id, profile_id, input_items, response, created_at)
           SELECT $1, id, '[]', '{}', now() - $2 * interval '1 day' FROM profiles
           WHERE namespace = 'default' AND external_id = 'retained'`,
          [id, days]
        )
      const threadsLeft = (namespace: string) =>
        kept.query<{ thread_id: string }>(
          `SELECT DISTINCT thread_id FROM messages WHERE thread_id IS NOT NULL
             AND profile_id IN (SELECT id FROM profiles WHERE namespace = $1) ORDER BY thread_id`,
          [namespace]
        )
      // The sweep that deleted the old turns of a namespace saw its younger ones and kept them.
      await eventually(async () => ((await threadsLeft("default")).length === 1 ? true : undefined), 10_000)
      expect((await threadsLeft("default")).map((row) => row.thread_id)).toEqual(["recent"])
      await eventually(async () => ((await threadsLeft("archive")).length === 1 ? true : undefined), 10_000)
      expect((await threadsLeft("archive")).map((row) => row.thread_id)).toEqual(["old"])
      const responsesLeft = async () =>
        (await kept.query<{ id: string }>("SELECT id FROM stored_responses ORDER BY id")).map((row) => row.id)
      await eventually(async () => ((await responsesLeft()).length === 1 ? true : undefined), 10_000)
      expect(await responsesLeft()).toEqual(["resp_new"])
    } finally {
      await kept.close()
      await provider.close()
    }
  })

  it("refuses a malformed retention at start, naming the variable", async () => {
    await expect(startGateway({ THREAD_RETENTION_DAYS: "30,Bad Name=7" })).rejects.toThrow(/THREAD_RETENTION_DAYS/)
  })
})
