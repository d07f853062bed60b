/**
 * Where a streamed request's time to its first byte goes, step by step, across the processes: the
 * client (this process), the gateway and the mock provider (also this process) note when each step
 * happens, on the same clock (`performance.timeOrigin + performance.now()`). The gateway's steps come
 * from Node's and undici's diagnostics channels and its first write (`bench/timelinePreload.mjs`,
 * loaded with `--import`: the gateway's code is not touched). The same requests go directly to the
 * mock, for the steps a proxy adds. Medians of sequential requests after a warm-up; a 0 ms mock whose
 * first chunks come at once and its end a millisecond later (so the first byte is not the end, which
 * waits for the turn's commit).
 *
 *   npm run bench:timeline             # about a minute; writes bench/results/timeline.md
 *   npm run bench:timeline -- --smoke  # a few requests: checks that it works (writes nothing)
 */
import { readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Pool } from "undici"
import { startBenchDatabase } from "./benchDatabase.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { median } from "./loader.ts"
import { type MockStep, startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, gatewayEnvironment, root, sleep, startProcess, stop } from "./processes.ts"

const smoke = process.argv.includes("--smoke")
const WARMUP = smoke ? 50 : 1500
const REQUESTS = smoke ? 20 : 400

const now = () => performance.timeOrigin + performance.now()
type Steps = Record<string, number>

/** The mock's steps, in the order they happen (one request at a time). */
const mockSteps: Array<[MockStep, number]> = []
const database = await startBenchDatabase("timeline")
const mock = await startMockUpstream(0, (step) => mockSteps.push([step, now()]))
await mock.configure({ latencyMs: 0, ttftMs: 0, chunks: 2, chunkMs: 1 })
const port = await freePort()
const timelineFile = join(database.dataDir, "gateway-steps.json")
const gateway = await startProcess(
  `${root}/src/main.ts`,
  {
    ...gatewayEnvironment(await database.createDatabase("timeline"), mock.url),
    PORT: String(port),
    TIMELINE_FILE: timelineFile,
    NODE_OPTIONS: `--import=${join(root, "bench/timelinePreload.mjs")}`
  },
  `http://127.0.0.1:${port}/health`
)
const gatewayUrl = `http://127.0.0.1:${port}`
await seedBenchProfile(gatewayUrl)

/** Sequential streamed requests: when each was sent, its head came and its first body chunk. */
const run = async (origin: string, count: number): Promise<Array<Steps>> => {
  const pool = new Pool(origin, { connections: 1, keepAliveTimeout: 60_000 })
  const out: Array<Steps> = []
  for (let i = 0; i < count; i++) {
    const sent = now()
    const response = await pool.request({
      method: "POST",
      path: "/v1/chat/completions",
      headers: { "content-type": "application/json", "x-service-id": BENCH_USER },
      body: chatBody(true)
    })
    let firstByte = 0
    for await (const _ of response.body) if (firstByte === 0) firstByte = now()
    if (response.statusCode !== 200) throw new Error(`a request was answered ${response.statusCode}`)
    out.push({ "client.sent": sent, "client.firstByte": firstByte })
  }
  await pool.close()
  return out
}

/** Adds the mock's steps, request by request. */
const withMockSteps = (requests: Array<Steps>) =>
  requests.map((steps, i) => ({
    ...steps,
    "provider.received": mockSteps[2 * i]![1],
    "provider.firstChunk": mockSteps[2 * i + 1]![1]
  }))

await run(gatewayUrl, WARMUP)
await run(mock.url, WARMUP / 5)
mockSteps.length = 0
const direct = withMockSteps(await run(mock.url, REQUESTS))
mockSteps.length = 0
gateway.kill("SIGUSR2") // drops the warm-up's steps
await sleep(500)
const throughGateway = withMockSteps(await run(gatewayUrl, REQUESTS))
gateway.kill("SIGUSR2")
await sleep(1000)
const gatewaySteps = JSON.parse(await readFile(timelineFile, "utf8")) as Array<[string, number]>
await stop(gateway)
await mock.close()
await database.close()

// The gateway's steps, request by request: each request starts with `gateway.received`.
const perRequest: Array<Steps> = []
for (const [step, at] of gatewaySteps) {
  if (step === "gateway.received") perRequest.push({})
  const current = perRequest.at(-1)
  if (current !== undefined && current[step] === undefined) current[step] = at
}
if (perRequest.length !== throughGateway.length)
  throw new Error(`${perRequest.length} requests noted by the gateway, ${throughGateway.length} sent`)
const gatewayRequests = throughGateway.map((steps, i) => ({ ...steps, ...perRequest[i] }))

/** The median time between two steps. */
const between = (requests: Array<Steps>, from: string, to: string) =>
  median(requests.map((steps) => steps[to]! - steps[from]!))

const fmt = (ms: number) => ms.toFixed(3)
type Span = readonly [from: string, to: string]
/** Each step: its name, what it spans, and its two ends through the gateway and (where it has one) directly. */
const STEPS: ReadonlyArray<readonly [string, string, Span, Span?]> = [
  [
    "client → the proxy has the request",
    "the client's send to the gateway's `request` event (direct: the mock's, body read)",
    ["client.sent", "gateway.received"],
    ["client.sent", "provider.received"]
  ],
  [
    "the gateway's pipeline before the provider",
    "to undici's request to the provider",
    ["gateway.received", "gateway.providerCall"]
  ],
  ["the request to the provider", "to the provider's body read", ["gateway.providerCall", "provider.received"]],
  [
    "the provider itself",
    "its body read to its first chunk written",
    ["provider.received", "provider.firstChunk"],
    ["provider.received", "provider.firstChunk"]
  ],
  [
    "the provider's head back to the gateway",
    "to undici's `headers` event",
    ["provider.firstChunk", "gateway.providerHead"]
  ],
  [
    "the gateway from the provider's head to its first write",
    "the answer's head, the relay of the first chunk",
    ["gateway.providerHead", "gateway.firstWrite"]
  ],
  [
    "the first write to the client's first byte",
    "direct: the mock's first chunk to the client's first byte",
    ["gateway.firstWrite", "client.firstByte"],
    ["provider.firstChunk", "client.firstByte"]
  ]
]
const ttft = between(gatewayRequests, "client.sent", "client.firstByte")
const directTtft = between(direct, "client.sent", "client.firstByte")
const report = [
  `Timeline of a streamed request (\`npm run bench:timeline\`), commit ${commit}: medians of ${REQUESTS} sequential requests after ${WARMUP}, ms; the main benchmark's profile and message, a 0 ms mock`,
  "",
  "| Step | From … to … | through the gateway | direct |",
  "|---|---|---|---|",
  ...STEPS.map(
    ([step, span, viaGateway, viaDirect]) =>
      `| ${step} | ${span} | ${fmt(between(gatewayRequests, ...viaGateway))} | ${viaDirect === undefined ? "" : fmt(between(direct, ...viaDirect))} |`
  ),
  `| **time to first byte** | the client's send to its first byte | **${fmt(ttft)}** | **${fmt(directTtft)}** |`,
  "",
  `Added: ${fmt(ttft - directTtft)} ms. The steps' medians need not add up to the median of the whole.`
].join("\n")
process.stdout.write(`\n${report}\n`)
if (!smoke) await writeFile(join(root, "bench/results/timeline.md"), `${report}\n`)
