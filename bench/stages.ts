/**
 * Where a request's time goes, stage by stage, as the gateway itself times them (`gateway_stage_seconds`
 * and `gateway_overhead_seconds` from its /metrics, read before and after each block of requests):
 * sequential requests with the main benchmark's profile and message on a 0 ms mock, non-streamed and
 * streamed, and how much of the added time the client sees lies outside the stages, and the gateway's CPU
 * per request (all its threads; the local model's thread apart). With `--conversation`, the realistic
 * profile instead (bench/conversationProfile.ts: 300 of a LoCoMo conversation's turns as memories, all
 * embedded before anything is measured, and a new message every request). With another
 * checkout (one that has `gateway_stage_seconds`), both gateways are alive and measured in alternating
 * rounds, side by side. The stages are means (they add up to the overhead); what the client saw is the
 * median (a mean would follow the few requests that met a garbage collection).
 *
 *   npm run bench:stages                              # this checkout alone (about 2 minutes; writes bench/results/stages.md)
 *   npm run bench:stages -- /tmp/previous             # this checkout against another one
 *   npm run bench:stages -- /tmp/previous --env RECORD_SYNCHRONOUS_COMMIT=true   # a setting for both
 *   npm run bench:stages -- --conversation            # new messages on 300 conversational memories (writes stages-conversation.md)
 */
import { writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { startBenchDatabase } from "./benchDatabase.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { CONVERSATION_USER, newMessageBody, seedConversationProfile, waitForJobs } from "./conversationProfile.ts"
import { load, median, type Sample } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, gatewayEnvironment, root, startProcess, stop, threadCpuMs } from "./processes.ts"
import { LOCOMO_TUNE, loadLocomoConversation, locomoAvailable } from "./recall/locomo.ts"

const other = process.argv[2] !== undefined && !process.argv[2].startsWith("--") ? resolve(process.argv[2]) : undefined
const smoke = process.argv.includes("--smoke")
if (process.argv.includes("--conversation") && !locomoAvailable())
  throw new Error("--conversation needs ../shared/datasets/locomo")
const extraEnv = Object.fromEntries(
  process.argv.flatMap((arg, i) => (process.argv[i - 1] === "--env" ? [arg.split("=", 2) as [string, string]] : []))
)
const WARMUP = smoke ? 50 : 1000
const ROUNDS = smoke ? 2 : 4
const PER_ROUND = smoke ? 50 : 200

type Kind = "plain" | "streamed"
/** Seconds summed and requests counted per series (`name{labels}`), from one scrape. */
type Scrape = Map<string, number>

const database = await startBenchDatabase("stages")
const mock = await startMockUpstream()
// A stream's first chunks come at once and its end a millisecond later: with no gap the whole answer
// arrives in one read, and its first byte would wait for the turn's commit like the end it carries.
await mock.configure({ latencyMs: 0, ttftMs: 0, chunks: 2, chunkMs: 1 })

const conversation = process.argv.includes("--conversation") ? await loadLocomoConversation(LOCOMO_TUNE[0]) : undefined
const user = conversation === undefined ? BENCH_USER : CONVERSATION_USER
/** Requests sent so far, over every arm: with `--conversation` no two share a message. */
let sent = 0
/** The bodies of the next `requests` requests: the same message every time, or (`--conversation`) a new one each. */
const nextBodies = (stream: boolean, requests: number): string | ((n: number) => string) => {
  const offset = sent
  sent += requests
  if (conversation === undefined) return chatBody(stream)
  const body = newMessageBody(
    conversation.questions.map((q) => q.question),
    stream
  )
  return (n) => body(offset + n)
}

const scrape = async (base: string): Promise<Scrape> => {
  const text = await (await fetch(`${base}/metrics`)).text()
  const samples: Scrape = new Map()
  for (const line of text.split("\n")) {
    const match = /^(gateway_(?:stage|overhead|stream_first_chunk)_seconds_(?:sum|count))(\{[^}]*\})? (\S+)$/.exec(line)
    if (match !== null) samples.set(`${match[1]}${match[2] ?? ""}`, Number(match[3]))
  }
  return samples
}

const startGateway = async (name: string, checkout: string) => {
  const port = await freePort()
  const child = await startProcess(
    `${checkout}/src/main.ts`,
    { ...gatewayEnvironment(await database.createDatabase(name), mock.url), PORT: String(port), ...extraEnv },
    `http://127.0.0.1:${port}/health`
  )
  const base = `http://127.0.0.1:${port}`
  if (conversation === undefined) await seedBenchProfile(base)
  else {
    await seedConversationProfile(base, conversation)
    await waitForJobs(base)
  }
  const run = (stream: boolean, requests: number) =>
    load({
      url: `${base}/v1`,
      body: nextBodies(stream, requests),
      concurrency: 1,
      requests,
      headers: { "x-service-id": user }
    })
  await run(false, WARMUP)
  await run(true, WARMUP / 10)
  return { name, child, base, run, pid: child.pid! }
}

const gateways = [
  await startGateway("this", root),
  ...(other === undefined ? [] : [await startGateway("other", other)])
]
const arms = ["direct", ...gateways.map((gateway) => gateway.name)]

/** Per arm and kind: the client's samples, and the gateway's seconds and counts accumulated over the blocks. */
const seen = Object.fromEntries(arms.map((arm) => [arm, { plain: [] as Array<Sample>, streamed: [] as Array<Sample> }]))
const inside = Object.fromEntries(
  arms.map((arm) => [arm, { plain: new Map(), streamed: new Map() } as Record<Kind, Scrape>])
)
/** Per gateway: CPU ms by kind of thread and the requests they served, over every block. */
const cpu = Object.fromEntries(
  gateways.map((gateway) => [gateway.name, { threads: new Map<string, number>(), requests: 0 }])
)

const block = async (gateway: (typeof gateways)[number], kind: Kind) => {
  const before = await scrape(gateway.base)
  const cpuBefore = await threadCpuMs(gateway.pid)
  const { samples } = await gateway.run(kind === "streamed", PER_ROUND)
  const cpuAfter = await threadCpuMs(gateway.pid)
  const after = await scrape(gateway.base)
  const used = cpu[gateway.name]!
  used.requests += PER_ROUND
  for (const [thread, ms] of Object.entries(cpuAfter)) {
    used.threads.set(thread, (used.threads.get(thread) ?? 0) + ms - (cpuBefore[thread] ?? 0))
  }
  seen[gateway.name]![kind].push(...samples)
  const sums = inside[gateway.name]![kind]
  for (const [series, value] of after) sums.set(series, (sums.get(series) ?? 0) + value - (before.get(series) ?? 0))
}

for (let round = 0; round < ROUNDS; round++) {
  for (const kind of ["plain", "streamed"] as const) {
    const direct = await load({
      url: `${mock.url}/v1`,
      body: nextBodies(kind === "streamed", PER_ROUND),
      concurrency: 1,
      requests: PER_ROUND
    })
    seen["direct"]![kind].push(...direct.samples)
  }
  for (const gateway of round % 2 === 0 ? gateways : [...gateways].reverse()) {
    await block(gateway, "plain")
    await block(gateway, "streamed")
  }
}
await Promise.all(gateways.map((gateway) => stop(gateway.child)))
await mock.close()
await database.close()

/** What the client waited for (median): the whole answer, or a stream's first byte. */
const clientMs = (arm: string, kind: Kind) =>
  median(seen[arm]![kind].map((sample) => (kind === "streamed" ? sample.ttftMs : sample.ms)))
/** Mean milliseconds per request of a histogram series over every block. */
const seriesMs = (arm: string, kind: Kind, series: string) => {
  const sums = inside[arm]![kind]
  const count = sums.get(`${series.replace(/(\{|$)/, "_count$1")}`) ?? 0
  return count === 0 ? Number.NaN : ((sums.get(`${series.replace(/(\{|$)/, "_sum$1")}`) ?? 0) / count) * 1000
}
const stage = (arm: string, kind: Kind, name: string) => seriesMs(arm, kind, `gateway_stage_seconds{stage="${name}"}`)
const overhead = (arm: string, kind: Kind) => seriesMs(arm, kind, "gateway_overhead_seconds")
/** The forward stage without the provider call it waits for. */
const forwarding = (arm: string, kind: Kind) => stage(arm, kind, "pipeline.forward") - stage(arm, kind, "Upstream.chat")
const named = (arm: string, kind: Kind) =>
  stage(arm, kind, "pipeline.resolveUser") +
  stage(arm, kind, "pipeline.loadProfile") +
  stage(arm, kind, "pipeline.inject") +
  forwarding(arm, kind)
/** How much longer the provider takes to answer the gateway (its response head) than the client directly (a stream's first byte). */
const hop = (arm: string) => stage(arm, "streamed", "Upstream.chat") - clientMs("direct", "streamed")
const added = (arm: string, kind: Kind) => clientMs(arm, kind) - clientMs("direct", kind)

/** The gateway's CPU per request, summed over the threads `counted` keeps. */
const cpuPerRequest = (arm: string, counted: (thread: string) => boolean) => {
  const used = cpu[arm]!
  const ms = [...used.threads].reduce((sum, [thread, value]) => sum + (counted(thread) ? value : 0), 0)
  return ms / used.requests
}

const rows: Array<[string, (arm: string) => number]> = [
  ["resolveUser (plugins, user id, rate limit)", (arm) => stage(arm, "streamed", "pipeline.resolveUser")],
  ["loadProfile (cache or database)", (arm) => stage(arm, "streamed", "pipeline.loadProfile")],
  ["inject (ranking, context block)", (arm) => stage(arm, "streamed", "pipeline.inject")],
  ["forward, less the provider call", (arm) => forwarding(arm, "streamed")],
  ["the rest of the pipeline (parse, the answer's head)", (arm) => overhead(arm, "streamed") - named(arm, "streamed")],
  ["**overhead before the provider, streamed**", (arm) => overhead(arm, "streamed")],
  [
    "outside the pipeline (HTTP in and out, the provider hop)",
    (arm) => added(arm, "streamed") - overhead(arm, "streamed")
  ],
  [
    "… of which from the provider's head to the first chunk relayed",
    (arm) =>
      seriesMs(arm, "streamed", "gateway_stream_first_chunk_seconds") -
      overhead(arm, "streamed") -
      stage(arm, "streamed", "Upstream.chat")
  ],
  ["… of which the provider call's own hop (gateway − direct)", (arm) => hop(arm)],
  ["**added time to first byte p50, streamed (gateway − direct)**", (arm) => added(arm, "streamed")],
  ["record (the turn's commit), non-streamed", (arm) => stage(arm, "plain", "pipeline.record")],
  ["overhead, non-streamed (record included)", (arm) => overhead(arm, "plain")],
  ["outside the pipeline, non-streamed", (arm) => added(arm, "plain") - overhead(arm, "plain")],
  ["**added time p50, non-streamed (gateway − direct)**", (arm) => added(arm, "plain")],
  ["CPU ms per request, all threads (both kinds)", (arm) => cpuPerRequest(arm, () => true)],
  ["… of which the local model's thread", (arm) => cpuPerRequest(arm, (thread) => thread === "WorkerThread")]
]
const fmt = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(3) : "n/a")
const names = gateways.map((gateway) => gateway.name)
const settings = Object.entries(extraEnv).map(([key, value]) => `${key}=${value}`)
const table = [
  `Stage timings (\`npm run bench:stages\`), this = ${commit}${other === undefined ? "" : `, other = ${other}`}: ms per request (stages: means; added: medians) over ${ROUNDS} rounds × ${PER_ROUND} sequential requests each way, after ${WARMUP}; 0 ms mock; ${conversation === undefined ? "the main benchmark's profile, the same message every time" : `${CONVERSATION_USER}: LoCoMo ${conversation.id}'s first turns as memories, a new message every request`}${settings.length > 0 ? `; ${settings.join(" ")}` : ""}`,
  "",
  `| Stage | ${names.join(" | ")}${other === undefined ? "" : " | this − other"} |`,
  `|---|${names.map(() => "---|").join("")}${other === undefined ? "" : "---|"}`,
  ...rows.map(([label, of]) => {
    const values = names.map(of)
    return `| ${label} | ${values.map(fmt).join(" | ")}${other === undefined ? "" : ` | ${fmt(values[0]! - values[1]!)}`} |`
  }),
  ""
].join("\n")
process.stdout.write(`\n${table}`)
if (!smoke)
  await writeFile(
    join(root, `bench/results/${conversation === undefined ? "stages" : "stages-conversation"}.md`),
    table
  )
