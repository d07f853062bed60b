/**
 * Replicas benchmark: what one replica's change looks like from the others, on a database whose
 * answers arrive late. Three gateway processes on one PostgreSQL, each behind a TCP proxy that
 * delays the database's answers (15 ms: a database in another zone), the default
 * `CONTEXT_CACHE_FENCE_MS`.
 *
 * - Changes: users cached on every replica get a new memory through one replica; right after the
 *   API answered, every replica is asked until its injection names the new memory. Prints how long
 *   after the answer each replica still injected the old state (0 when the first ask already had it),
 *   and how many were still stale 1 s after.
 * - Erasure: users cached on every replica are deleted through one replica; right after the DELETE
 *   answered, every replica is asked as the user. Counts injections of the erased profile (by its id
 *   in the receipt) and prints how long the DELETE took (it waits for the fence).
 *
 *   npm run bench:replicas                          # writes bench/results/replicas.{json,md}
 *   npm run bench:replicas -- --delay 15 --users 12 --rounds 8
 *   npm run bench:replicas -- --fence 0             # without the fence, for comparison
 */
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { startBenchDatabase } from "./benchDatabase.ts"
import { startLatencyProxy } from "./latencyProxy.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, gatewayEnvironment, root, startProcess, stop } from "./processes.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(process.argv[index + 1])
}
const DELAY_MS = arg("delay", 15)
const USERS = arg("users", 12)
const ROUNDS = arg("rounds", 8)
const ERASED = arg("erased", 30)
/** CONTEXT_CACHE_FENCE_MS for the gateways (its default unless given; 0 shows what the fence buys). */
const FENCE = process.argv.includes("--fence") ? String(arg("fence", 500)) : undefined
const REPLICAS = 3
const GIVE_UP_MS = 5000

const log = (line: string) => process.stderr.write(`${line}\n`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const database = await startBenchDatabase("replicas")
const databaseUrl = await database.createDatabase("replicas")
const mock = await startMockUpstream()
const proxies = await Promise.all(Array.from({ length: REPLICAS }, () => startLatencyProxy(databaseUrl, DELAY_MS)))
const replicas: Array<{ readonly baseUrl: string; readonly child: Awaited<ReturnType<typeof startProcess>> }> = []
for (const proxy of proxies) {
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const child = await startProcess(
    join(root, "src/main.ts"),
    {
      ...gatewayEnvironment(proxy.url, mock.url),
      PORT: String(port),
      EMBEDDINGS: "off",
      RATE_LIMIT_API_PER_MINUTE: "0",
      RATE_LIMIT_USER_PER_MINUTE: "0",
      ...(FENCE === undefined ? {} : { CONTEXT_CACHE_FENCE_MS: FENCE })
    },
    `${baseUrl}/ready`
  )
  replicas.push({ baseUrl, child })
}
log(`replicas: ${REPLICAS} gateways, database answers delayed ${DELAY_MS} ms`)

interface Receipt {
  readonly profileId: string | null
  readonly memories?: ReadonlyArray<string>
}

/** Asks as the user through a replica; the receipt of what was injected. */
const ask = async (baseUrl: string, user: string, question: string): Promise<Receipt> => {
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-service-id": user },
    body: JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: question }] })
  })
  await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`chat answered ${response.status}`)
  return JSON.parse(response.headers.get("x-service-context") ?? "{}") as Receipt
}

const api = async (baseUrl: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text}`)
  return JSON.parse(text) as Record<string, unknown>
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

// 1. Changes seen from every replica.
const staleness: Array<number> = []
let notVisible = 0
await Promise.all(
  Array.from({ length: USERS }, async (_, u) => {
    const user = `replicas-change-${u}`
    await api(replicas[0]!.baseUrl, "POST", "/api/profiles", { externalId: user })
    for (let round = 0; round < ROUNDS; round++) {
      const word = `zebra${u}x${round}`
      for (const replica of replicas) await ask(replica.baseUrl, user, `warm up ${round}`)
      const writer = replicas[(u + round) % REPLICAS]!
      const { memory } = (await api(writer.baseUrl, "POST", `/api/profiles/${user}/memories`, {
        content: `The user's locker code word is ${word}.`,
        type: "fact",
        cues: []
      })) as { memory: { id: string } }
      const answered = performance.now()
      await Promise.all(
        replicas.map(async (replica) => {
          while (true) {
            const asked = performance.now()
            const receipt = await ask(replica.baseUrl, user, `What is my locker code word ${word}?`)
            if (receipt.memories?.includes(memory.id) === true) return staleness.push(Math.max(0, asked - answered))
            if (asked - answered > GIVE_UP_MS) return notVisible++
            await sleep(20)
          }
        })
      )
    }
  })
)
const staleAfter1s = staleness.filter((ms) => ms > 1000).length + notVisible

// 2. Erased profiles seen from every replica.
const deleteMs: Array<number> = []
let erasedServed = 0
let asksAfterErase = 0
for (let e = 0; e < ERASED; e++) {
  const user = `replicas-erased-${e}`
  const { profile } = (await api(replicas[0]!.baseUrl, "POST", "/api/profiles", { externalId: user })) as {
    profile: { id: string }
  }
  for (const replica of replicas) await ask(replica.baseUrl, user, "warm up")
  const eraser = replicas[e % REPLICAS]!
  const started = performance.now()
  await api(eraser.baseUrl, "DELETE", `/api/profiles/${user}`)
  deleteMs.push(performance.now() - started)
  const receipts = await Promise.all(replicas.map((replica) => ask(replica.baseUrl, user, "am I still known?")))
  asksAfterErase += receipts.length
  erasedServed += receipts.filter((receipt) => receipt.profileId === profile.id).length
}

for (const replica of replicas) await stop(replica.child)
for (const proxy of proxies) await proxy.close()
await mock.close()
await database.close()

const results = {
  commit,
  date: new Date().toISOString(),
  delayMs: DELAY_MS,
  fenceMs: FENCE ?? "default",
  changes: {
    observations: staleness.length + notVisible,
    staleMsP50: percentile(staleness, 50),
    staleMsP99: percentile(staleness, 99),
    staleMsMax: Math.max(...staleness),
    staleAfter1s
  },
  erasure: {
    erased: ERASED,
    asksAfterErase,
    erasedServed,
    deleteMsP50: percentile(deleteMs, 50),
    deleteMsMax: Math.max(...deleteMs)
  }
}
const ms = (value: number) => value.toFixed(0)
const markdown = [
  `Replicas benchmark (\`npm run bench:replicas\`), commit ${commit}, ${results.date.slice(0, 10)}: ${REPLICAS} gateways on one PostgreSQL, its answers delayed ${DELAY_MS} ms, CONTEXT_CACHE_FENCE_MS ${FENCE ?? "at its default (500)"}.`,
  "",
  "| Check | Result |",
  "|---|---|",
  `| A new memory, asked for on every replica right after the API answered (${results.changes.observations} asks) | still stale for p50 ${ms(results.changes.staleMsP50)} ms, p99 ${ms(results.changes.staleMsP99)} ms, at most ${ms(results.changes.staleMsMax)} ms; stale 1 s after: ${staleAfter1s} |`,
  `| Erased profiles, asked for on every replica right after the DELETE answered (${asksAfterErase} asks) | erased profile injected: ${erasedServed}; DELETE took p50 ${ms(results.erasure.deleteMsP50)} ms, at most ${ms(results.erasure.deleteMsMax)} ms |`
].join("\n")
await writeFile(join(root, "bench/results/replicas.json"), `${JSON.stringify(results, null, 2)}\n`)
await writeFile(join(root, "bench/results/replicas.md"), `${markdown}\n`)
process.stdout.write(`${markdown}\n`)
