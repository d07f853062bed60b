/**
 * The benchmark's provider: an OpenAI-compatible mock whose shape is set per cell through
 * `POST /__config` (latency, time to first token, chunk count and spacing, usage chunk).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface MockShape {
  /** Non-streaming: delay before the answer. */
  readonly latencyMs: number
  /** Streaming: delay before the first chunk, then `chunks` chunks `chunkMs` apart. */
  readonly ttftMs: number
  readonly chunks: number
  readonly chunkMs: number
}

const answer = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-model",
  system_fingerprint: "fp_bench",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: "This is a short answer from the mock upstream for the benchmark.",
        refusal: null
      },
      logprobs: null,
      finish_reason: "stop"
    }
  ],
  usage: { prompt_tokens: 42, completion_tokens: 12, total_tokens: 54 }
})

/** What the extraction worker gets back (it asks for JSON): one memory and a summary, as a real model might. */
const extractionAnswer = JSON.stringify({
  id: "chatcmpl-bench-extraction",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-model",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: JSON.stringify({
          traits: [],
          memories: [{ content: "The user asked what to cook tonight.", type: "context", importance: 0.3 }],
          summary: "A home cook who likes quick vegetable dishes."
        })
      },
      finish_reason: "stop"
    }
  ],
  usage: { prompt_tokens: 200, completion_tokens: 40, total_tokens: 240 }
})

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: "bench-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

const sleep = (ms: number) => (ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms)))

/** What `bench:timeline` is told of each streamed request: when it arrived, when its first chunk was written. */
export type MockStep = "received" | "firstChunk"

export const startMockUpstream = async (port = 0, observe?: (step: MockStep) => void) => {
  let shape: MockShape = { latencyMs: 0, ttftMs: 0, chunks: 20, chunkMs: 10 }

  const stream = async (res: ServerResponse, includeUsage: boolean) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    let open = true
    res.on("close", () => (open = false))
    await sleep(shape.ttftMs)
    if (!open) return
    observe?.("firstChunk")
    res.write(chunk({ role: "assistant", content: "" }))
    for (let i = 0; i < shape.chunks && open; i++) {
      if (i > 0) await sleep(shape.chunkMs)
      if (open) res.write(chunk({ content: `token${i} ` }))
    }
    if (!open) return
    res.write(chunk({}, "stop"))
    if (includeUsage) {
      res.write(
        `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: "bench-model", choices: [], usage: { prompt_tokens: 42, completion_tokens: shape.chunks, total_tokens: 42 + shape.chunks } })}\n\n`
      )
    }
    res.end("data: [DONE]\n\n")
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, body: string) => {
    if (req.url === "/__config") {
      shape = { ...shape, ...JSON.parse(body) }
      res.end("ok")
      return
    }
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(
        JSON.stringify({
          object: "list",
          data: [{ id: "bench-model", object: "model", created: 1, owned_by: "bench" }]
        })
      )
      return
    }
    const request = JSON.parse(body) as {
      stream?: boolean
      stream_options?: { include_usage?: boolean }
      response_format?: unknown
    }
    if (request.stream === true) {
      observe?.("received")
      return stream(res, request.stream_options?.include_usage === true)
    }
    await sleep(shape.latencyMs)
    res.writeHead(200, { "content-type": "application/json", "x-request-id": "req_bench" })
    res.end(request.response_format === undefined ? answer : extractionAnswer)
  }

  const server = createServer((req, res) => {
    const parts: Array<Buffer> = []
    req.on("data", (part: Buffer) => parts.push(part))
    req.on("end", () => void handle(req, res, Buffer.concat(parts).toString("utf8")))
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    configure: async (next: Partial<MockShape>) => {
      await fetch(`${url}/__config`, { method: "POST", body: JSON.stringify(next) })
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
