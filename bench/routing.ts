/**
 * Reliability benchmark (issue 42's targets), against the real gateway process:
 *  1. a provider failing 20% of attempts before answering (10% 500, 5% 429 with `Retry-After: 0`, 5%
 *     connection reset), 200 chat completions with new messages: how many were answered, and how
 *     many turns were recorded for them (one each);
 *  2. a routed model whose first target (OpenAI) is down: 60 requests, every other one streamed,
 *     answered by the second (an Anthropic-shaped provider);
 *  3. with that target's breaker open: the routed request's time beside the same request sent
 *     straight to the second target (medians of alternating requests).
 * The failures are drawn from a seeded generator: the same run each time.
 *
 *   npm run bench:routing
 *   npm run bench:routing -- --smoke   # fewer requests: checks the script works
 *   npm run bench:routing -- --retries 0   # another UPSTREAM_RETRIES (default: the gateway's, 2)
 */
import { mkdtemp, writeFile } from "node:fs/promises"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { startBenchDatabase } from "./benchDatabase.ts"
import { freePort, root, startProcess, stop } from "./processes.ts"

const smoke = process.argv.includes("--smoke")
const FLAKY_REQUESTS = smoke ? 20 : 200
const ROUTED_REQUESTS = smoke ? 6 : 60
const TIMED_PAIRS = smoke ? 10 : 200
const retriesAt = process.argv.indexOf("--retries")
const retries = retriesAt === -1 ? {} : { UPSTREAM_RETRIES: String(Number(process.argv[retriesAt + 1])) }
const log = (line: string) => process.stdout.write(`${line}\n`)

/** Mulberry32: a small seeded generator, so every run meets the same failures. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const readBody = (req: IncomingMessage) =>
  new Promise<Record<string, unknown>>((resolve) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}")))
  })

const listen = async (handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>) => {
  const server = createServer((req, res) => void handle(req, res))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }
}

const completion = (model: string) =>
  JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "An answer." }, finish_reason: "stop" }],
    usage: { prompt_tokens: 40, completion_tokens: 3, total_tokens: 43 }
  })

/** An OpenAI-compatible provider failing a fifth of the attempts before answering. */
const flaky = await (async () => {
  const random = seeded(42)
  const counts = { attempts: 0, failed: 0 }
  const provider = await listen(async (req, res) => {
    const body = await readBody(req)
    counts.attempts++
    const draw = random()
    if (draw < 0.2) counts.failed++
    if (draw < 0.1) {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: "The server had an error", type: "server_error" } }))
    } else if (draw < 0.15) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "0" })
      res.end(JSON.stringify({ error: { message: "Rate limit reached", type: "rate_limit_error" } }))
    } else if (draw < 0.2) req.socket.destroy()
    else {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(completion(String(body["model"])))
    }
  })
  return { ...provider, counts }
})()

/** An Anthropic-shaped provider that always answers, streamed or not. */
const anthropic = await listen(async (req, res) => {
  const body = await readBody(req)
  const model = String(body["model"])
  const message = { id: "msg_bench", type: "message", role: "assistant", model }
  const usage = { input_tokens: 40, output_tokens: 3 }
  if (body["stream"] !== true) {
    res.writeHead(200, { "content-type": "application/json" })
    res.end(
      JSON.stringify({
        ...message,
        content: [{ type: "text", text: "An answer." }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage
      })
    )
    return
  }
  const event = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  res.writeHead(200, { "content-type": "text/event-stream" })
  res.end(
    event("message_start", { message: { ...message, content: [], stop_reason: null, usage } }) +
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
      event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "An answer." } }) +
      event("content_block_stop", { index: 0 }) +
      event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }) +
      event("message_stop", {})
  )
})

/** Where the first target of the route would be: a port nothing listens on. */
const downUrl = `http://127.0.0.1:${await freePort()}/v1`

const dir = await mkdtemp(join(tmpdir(), "bench-routes-"))
const routesFile = join(dir, "routes.json")
await writeFile(
  routesFile,
  JSON.stringify({
    routes: [
      {
        model: "smart",
        targets: [
          { provider: "openai", model: "gpt-4o-mini", baseUrl: downUrl },
          { provider: "anthropic", model: "claude-haiku-4-5" }
        ]
      }
    ]
  })
)

const db = await startBenchDatabase("routing")
const databaseUrl = await db.createDatabase("routing")
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const gateway = await startProcess(
  join(root, "src/main.ts"),
  {
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "error",
    UPSTREAM_BASE_URL: flaky.url,
    UPSTREAM_API_KEY: "sk-bench-openai",
    ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: "sk-bench-anthropic",
    ROUTES_FILE: routesFile,
    EXTRACTION_CONCURRENCY: "0",
    EMBEDDINGS: "off",
    ...retries
  },
  `${baseUrl}/ready`
)

const ask = async (userId: string, model: string, content: string, stream = false, headers = {}) => {
  const started = performance.now()
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-service-id": userId, ...headers },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content }] })
  })
  const text = await response.text()
  const complete = response.status === 200 && (!stream || text.includes("data: [DONE]"))
  return { complete, upstream: response.headers.get("x-service-upstream"), ms: performance.now() - started }
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

try {
  // 1. Retries through a flaky provider.
  let answered = 0
  for (let i = 0; i < FLAKY_REQUESTS; i++) {
    if ((await ask(`flaky-${i % 20}`, "gpt-4o-mini", `Question ${i}: what should I cook tonight?`)).complete) answered++
  }
  const [recorded] = await db.run(
    Effect.flatMap(
      PgClient.PgClient,
      (sql) => sql<{ turns: number }>`SELECT count(*)::int AS turns FROM messages WHERE role = 'assistant'`
    ),
    databaseUrl
  )
  const turns = recorded?.turns ?? 0
  log(
    `flaky provider (${flaky.counts.failed} of ${flaky.counts.attempts} attempts failed before answering): ` +
      `${answered}/${FLAKY_REQUESTS} answered, ${turns} turns recorded`
  )

  // 2. A routed model whose first target is down.
  let bySecond = 0
  for (let i = 0; i < ROUTED_REQUESTS; i++) {
    const reply = await ask(`routed-${i % 10}`, "smart", `Routed question ${i}`, i % 2 === 1)
    if (reply.complete && reply.upstream === "anthropic/claude-haiku-4-5") bySecond++
  }
  log(`first target down: ${bySecond}/${ROUTED_REQUESTS} answered by the second provider (half streamed)`)

  // 3. Its breaker is open now: what the route costs beside going straight to the second target.
  const routed: Array<number> = []
  const straight: Array<number> = []
  for (let i = 0; i < TIMED_PAIRS; i++) {
    routed.push((await ask(`timed-${i % 10}`, "smart", `Timed question ${i}`)).ms)
    const direct = await ask(`timed-${i % 10}`, "claude-haiku-4-5", `Direct question ${i}`, false, {
      "x-upstream-provider": "anthropic"
    })
    straight.push(direct.ms)
  }
  log(
    `breaker open: routed ${median(routed).toFixed(2)} ms, straight to the second target ` +
      `${median(straight).toFixed(2)} ms (medians of ${TIMED_PAIRS})`
  )
} finally {
  await stop(gateway)
  flaky.server.close()
  anthropic.server.close()
  await db.close()
}
