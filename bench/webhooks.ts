/**
 * Webhook delivery benchmark: how many deliveries a second one busy, healthy webhook gets, and how
 * long a healthy webhook's deliveries take beside a receiver that never answers. One gateway process
 * on the benchmarks' PostgreSQL, receivers on loopback; events are queued the way the database's
 * triggers queue them (`queue_webhook_event`), spread over users (each user's events go in order).
 *
 *   node bench/webhooks.ts                                  # 2000 events about 50 users, answered at once
 *   node bench/webhooks.ts --latency 20 --loops 4           # a receiver 20 ms away, WEBHOOK_CONCURRENCY=4
 *   node bench/webhooks.ts --in-flight 4                    # WEBHOOK_MAX_IN_FLIGHT=4
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { startBenchDatabase } from "./benchDatabase.ts"
import { commit, freePort, root, sleep, startProcess, stop } from "./processes.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(process.argv[index + 1])
}
const EVENTS = arg("events", 2000)
const USERS = arg("users", 50)
const LATENCY_MS = arg("latency", 0)
const LOOPS = arg("loops", 2)
const IN_FLIGHT = process.argv.includes("--in-flight") ? String(arg("in-flight", 1)) : undefined
const ADMIN = "sk-admin-bench-webhooks-0123456789"

const log = (line: string) => process.stderr.write(`${line}\n`)

/** A receiver that answers 204 after `latencyMs` (or never), counting what it got. */
const startReceiver = async (latencyMs: number | "never") => {
  let received = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      received++
      if (latencyMs === "never") return
      setTimeout(() => res.writeHead(204).end(), latencyMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

const database = await startBenchDatabase("webhooks")
const databaseUrl = await database.createDatabase("webhooks")
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const gateway = await startProcess(
  join(root, "src/main.ts"),
  {
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "warn",
    ADMIN_API_KEY: ADMIN,
    EXTRACTION_CONCURRENCY: "0",
    EMBEDDINGS: "off",
    RATE_LIMIT_API_PER_MINUTE: "0",
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_CONCURRENCY: String(LOOPS),
    WEBHOOK_TIMEOUT_MS: "3000",
    ...(IN_FLIGHT === undefined ? {} : { WEBHOOK_MAX_IN_FLIGHT: IN_FLIGHT })
  },
  `${baseUrl}/ready`
)

const subscribe = async (url: string, namespace: string) => {
  const response = await fetch(`${baseUrl}/api/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ url, events: ["memory.created"], namespace })
  })
  if (response.status !== 201) throw new Error(`webhook not created: ${response.status} ${await response.text()}`)
}

/** Queues `count` events of `namespace` about `users` users, in one transaction; resolves once committed. */
const queueEvents = (namespace: string, count: number, users: number) =>
  database.run(
    Effect.flatMap(PgClient.PgClient, (sql) =>
      sql.unsafe(
        `SELECT queue_webhook_event($1, md5($1 || (i % $3))::uuid, 'user-' || (i % $3), 'memory.created', '{}'::jsonb)
         FROM generate_series(1, $2) AS i`,
        [namespace, count, users]
      )
    ),
    databaseUrl
  )

const until = async (done: () => boolean, giveUpMs = 600_000) => {
  const started = performance.now()
  while (!done()) {
    if (performance.now() - started > giveUpMs) throw new Error("gave up waiting")
    await sleep(5)
  }
  return performance.now() - started
}

// 1. One busy, healthy webhook: deliveries a second.
const busy = await startReceiver(LATENCY_MS)
await subscribe(busy.url, "busy")
await queueEvents("busy", EVENTS, USERS)
// From the commit: none of them could be claimed before it.
const busyMs = await until(() => busy.received() >= EVENTS)
const perSecond = (EVENTS / busyMs) * 1000

// 2. A healthy webhook's 20 deliveries while another namespace's receiver never answers.
const dead = await startReceiver("never")
const healthy = await startReceiver(LATENCY_MS)
await subscribe(dead.url, "dead")
await subscribe(healthy.url, "healthy")
await queueEvents("dead", 20, 20)
await until(() => dead.received() > 0)
await queueEvents("healthy", 20, 5)
const besideDeadMs = await until(() => healthy.received() >= 20)

await stop(gateway)
for (const receiver of [busy, dead, healthy]) await receiver.close()
await database.close()

const summary = [
  `Webhooks benchmark (\`node bench/webhooks.ts\`), commit ${commit}, ${new Date().toISOString().slice(0, 10)}:`,
  `WEBHOOK_CONCURRENCY=${LOOPS}, WEBHOOK_MAX_IN_FLIGHT=${IN_FLIGHT ?? "default"}, receivers answering after ${LATENCY_MS} ms.`,
  `- one busy webhook, ${EVENTS} events about ${USERS} users: ${busyMs.toFixed(0)} ms, ${perSecond.toFixed(0)} deliveries/s`,
  `- a healthy webhook's 20 deliveries beside a receiver that never answers (WEBHOOK_TIMEOUT_MS=3000): ${besideDeadMs.toFixed(0)} ms`
].join("\n")
log(summary)
