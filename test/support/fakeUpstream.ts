import { createServer, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * The one test double: a scripted LLM provider on loopback. It records every request it receives
 * and answers each with the next scripted reply (or a default completion).
 */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly body: Record<string, unknown> | undefined
  readonly rawBody: string
  /** The body's bytes as received (uploads). */
  readonly bytes: Buffer
  /** Set when the caller hung up before the reply was fully written. */
  aborted: boolean
}

export type Reply =
  | {
      readonly kind: "json"
      readonly status: number
      readonly body: unknown
      readonly headers?: Record<string, string>
      readonly delayMs?: number
    }
  | {
      readonly kind: "sse"
      /** Raw SSE frames, written one per chunk (each should end with a blank line). */
      readonly frames: ReadonlyArray<string>
      readonly intervalMs?: number
      readonly headers?: Record<string, string>
      /** After the frames: end normally, destroy the socket, or go silent. */
      readonly then?: "end" | "destroy" | "stall"
    }
  | { readonly kind: "hang" }
  /** The connection closed without an answer (a reset before the response head). */
  | { readonly kind: "reset" }
  /** The reply the promise gives, when the test decides (a call held open while the test acts). */
  | { readonly kind: "later"; readonly reply: Promise<Reply> }
  | { readonly kind: "text"; readonly status: number; readonly body: string }
  | {
      readonly kind: "bytes"
      readonly status: number
      readonly headers: Record<string, string>
      readonly body: Uint8Array
    }

export interface FakeUpstream {
  /** Base URL to configure as `UPSTREAM_BASE_URL` / `ANTHROPIC_BASE_URL`. */
  readonly url: string
  readonly requests: Array<RecordedRequest>
  readonly enqueue: (...replies: ReadonlyArray<Reply>) => void
  /** Resolves once a request matching `test` has arrived (its headers; the body may still be on its way). */
  readonly received: (test: (request: { readonly method: string; readonly path: string }) => boolean) => Promise<void>
  /** Answers requests the queue has no reply for (before the default reply). */
  handler: ((request: RecordedRequest) => Reply | undefined) | undefined
  readonly reset: () => void
  readonly close: () => Promise<void>
}

export const completion = (
  options: {
    readonly content?: string | null
    readonly toolCalls?: ReadonlyArray<unknown>
    readonly model?: string
    readonly choices?: number
  } = {}
) => ({
  id: "chatcmpl-fake",
  object: "chat.completion",
  created: 1_700_000_000,
  model: options.model ?? "gpt-test",
  system_fingerprint: "fp_fake",
  choices: Array.from({ length: options.choices ?? 1 }, (_, index) => ({
    index,
    message: {
      role: "assistant",
      content: options.content === undefined ? `answer ${index}` : options.content,
      ...(options.toolCalls === undefined ? {} : { tool_calls: options.toolCalls }),
      refusal: null
    },
    logprobs: null,
    finish_reason: options.toolCalls === undefined ? "stop" : "tool_calls"
  })),
  usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }
})

/** OpenAI stream frames for the given text pieces, with a finish chunk, optional usage and `[DONE]`. */
export const chunkFrames = (pieces: ReadonlyArray<string>, options: { readonly usage?: boolean } = {}) => {
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "gpt-test",
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }]
    })}\n\n`
  return [
    chunk({ role: "assistant", content: "" }),
    ...pieces.map((content) => chunk({ content })),
    chunk({}, "stop"),
    ...(options.usage
      ? [
          `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1_700_000_000, model: "gpt-test", choices: [], usage: { prompt_tokens: 5, completion_tokens: pieces.length, total_tokens: 5 + pieces.length } })}\n\n`
        ]
      : []),
    "data: [DONE]\n\n"
  ]
}

/** Dimensions of the scripted embeddings. */
export const FAKE_EMBEDDING_DIMENSIONS = 64

/**
 * A deterministic stand-in for an embedding model: each word adds to a few dimensions picked by
 * its hash, so texts that share words are close and texts that do not are not.
 */
export const fakeEmbedding = (text: string): Array<number> => {
  const vector = new Array<number>(FAKE_EMBEDDING_DIMENSIONS).fill(0)
  for (const word of text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 2)) {
    let hash = 2166136261
    for (const char of word) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619)
    for (let k = 0; k < 3; k++) vector[(hash >>> (k * 8)) % FAKE_EMBEDDING_DIMENSIONS]! += k === 0 ? 1 : 0.5
  }
  return vector
}

/** An OpenAI `/embeddings` answer for the request's input. */
export const embeddingsReply = (body: Record<string, unknown> | undefined): Reply => {
  const input = body?.["input"]
  const texts = Array.isArray(input) ? input.map(String) : [String(input ?? "")]
  return {
    kind: "json",
    status: 200,
    body: {
      object: "list",
      model: body?.["model"] ?? "fake-embedding",
      data: texts.map((text, index) => ({ object: "embedding", index, embedding: fakeEmbedding(text) })),
      usage: { prompt_tokens: texts.length, total_tokens: texts.length }
    }
  }
}

const defaultReply = (request: RecordedRequest): Reply =>
  request.path.endsWith("/models")
    ? {
        kind: "json",
        status: 200,
        body: { object: "list", data: [{ id: "gpt-test", object: "model", created: 1, owned_by: "test" }] }
      }
    : request.path.endsWith("/embeddings")
      ? embeddingsReply(request.body)
      : { kind: "json", status: 200, body: completion(), headers: { "x-request-id": "req_fake_default" } }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const startFakeUpstream = async (): Promise<FakeUpstream> => {
  const requests: Array<RecordedRequest> = []
  const queue: Array<Reply> = []
  const sockets = new Set<import("node:net").Socket>()
  const arrived: Array<{ readonly method: string; readonly path: string }> = []
  const waiters = new Set<{
    readonly test: (request: { readonly method: string; readonly path: string }) => boolean
    readonly resolve: () => void
  }>()

  const respond = async (reply: Reply, res: ServerResponse, recorded: RecordedRequest) => {
    res.on("close", () => {
      if (!res.writableFinished) recorded.aborted = true
    })
    switch (reply.kind) {
      case "json":
        if (reply.delayMs !== undefined) await sleep(reply.delayMs)
        if (res.destroyed) return
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
        res.end(JSON.stringify(reply.body))
        return
      case "text":
        res.writeHead(reply.status, { "content-type": "text/plain" })
        res.end(reply.body)
        return
      case "bytes":
        res.writeHead(reply.status, { "content-length": String(reply.body.byteLength), ...reply.headers })
        res.end(reply.body)
        return
      case "hang":
        return
      case "reset":
        res.socket?.destroy()
        return
      case "later":
        return respond(await reply.reply, res, recorded)
      case "sse": {
        res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "req_fake_stream", ...reply.headers })
        for (const frame of reply.frames) {
          if (res.destroyed) return
          res.write(frame)
          await sleep(reply.intervalMs ?? 0)
        }
        if (reply.then === "destroy") res.socket?.destroy()
        else if (reply.then !== "stall") res.end()
      }
    }
  }

  const server: Server = createServer((req, res) => {
    const started = { method: req.method ?? "", path: req.url ?? "" }
    arrived.push(started)
    for (const waiter of waiters) {
      if (waiter.test(started)) {
        waiters.delete(waiter)
        waiter.resolve()
      }
    }
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const bytes = Buffer.concat(chunks)
      const raw = bytes.toString("utf8")
      let body: Record<string, unknown> | undefined
      try {
        body = raw === "" ? undefined : JSON.parse(raw)
      } catch {
        body = undefined
      }
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body,
        rawBody: raw,
        bytes,
        aborted: false
      }
      requests.push(recorded)
      void respond(queue.shift() ?? fake.handler?.(recorded) ?? defaultReply(recorded), res, recorded)
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo

  const fake: FakeUpstream = {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    handler: undefined,
    enqueue: (...replies) => queue.push(...replies),
    received: (test) =>
      arrived.some(test) ? Promise.resolve() : new Promise<void>((resolve) => waiters.add({ test, resolve })),
    reset: () => {
      requests.length = 0
      arrived.length = 0
      queue.length = 0
      fake.handler = undefined
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
  return fake
}

/**
 * A handler answering every chat request with "answer to <the last message>", streamed when asked:
 * a stored turn can then be matched to what the client received.
 */
export const answerNamingQuestion = (request: RecordedRequest): Reply => {
  const messages = (request.body?.["messages"] ?? []) as Array<{ role: string; content: string }>
  const answer = `answer to ${messages.at(-1)?.content ?? ""}`
  return request.body?.["stream"] === true
    ? { kind: "sse", frames: chunkFrames(answer.match(/.{1,8}/g) ?? [answer]) }
    : { kind: "json", status: 200, body: completion({ content: answer }) }
}

/** A chat completion whose message is the given JSON: what the extraction model answers. */
export const modelReply = (json: unknown, delayMs?: number): Reply => ({
  kind: "json",
  status: 200,
  body: completion({ content: typeof json === "string" ? json : JSON.stringify(json) }),
  ...(delayMs === undefined ? {} : { delayMs })
})

/** Polls until `check` returns a value other than `undefined` (background work is asynchronous). */
export const eventually = async <A>(check: () => Promise<A | undefined>, timeoutMs = 5000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error("condition not met in time")
    await sleep(25)
  }
}
