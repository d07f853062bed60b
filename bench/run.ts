/**
 * The benchmark: three arms measured in one run, interleaved in rounds (A B C A B C …, the first
 * round discarded as warm-up):
 *   A  direct to the mock provider
 *   B  a bare Node proxy that rewrites the body (bench/bareProxy.ts): the floor for a Node hop
 *   C  the gateway (`node src/main.ts`, default configuration) with a real PostgreSQL profile
 *      (traits + 50 memories)
 *   N  the same gateway, each request with `service.skipInjection` (the profile is still loaded and the
 *      turn recorded): C − N is what ranking and injecting cost
 *   D  a second gateway with RECORD_SYNCHRONOUS_COMMIT=true: D − C is what waiting for the turn's
 *      WAL flush costs
 * Proxies run on CPU 1, the mock, the loader and PostgreSQL on CPU 0 (when `taskset` exists).
 *
 *   npm run bench          # the full run, writes bench/results/latest.{json,md}
 *   npm run bench:smoke    # short cells: checks that the benchmark works (no timing verdicts)
 */
import { mkdir, writeFile } from "node:fs/promises"
import { cpus } from "node:os"
import { join } from "node:path"
import { startBenchDatabase } from "./benchDatabase.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { load, median, percentile, type Sample } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import {
  commit,
  freePort,
  gatewayEnvironment,
  hasTaskset,
  root,
  rssKiB,
  sleep,
  startProcess,
  stop
} from "./processes.ts"

const smoke = process.argv.includes("--smoke")

// ---- the run ---------------------------------------------------------------------------------

const database = await startBenchDatabase("bench")
const databaseUrl = database.url
const mock = await startMockUpstream()

// The gateway with extraction on (P2) gets a database of its own: its worker must only see its own
// turns, not the thousands the other cells leave queued (that work would compete with arms B and C).
const extractingDatabaseUrl = await database.createDatabase("bench_extracting")

const [barePort, gatewayPort, extractingPort, syncPort] = await Promise.all([
  freePort(),
  freePort(),
  freePort(),
  freePort()
])
const bare = await startProcess(
  join(root, "bench/bareProxy.ts"),
  { UPSTREAM: mock.url, PORT: String(barePort) },
  `http://127.0.0.1:${barePort}/`
)
const gatewayEnv = {
  ...gatewayEnvironment(databaseUrl, mock.url),
  // `EMBEDDINGS=off npm run bench` measures keyword-only ranking; the default is the local model.
  ...(process.env["EMBEDDINGS"] === undefined ? {} : { EMBEDDINGS: process.env["EMBEDDINGS"] })
}
const gateway = await startProcess(
  join(root, "src/main.ts"),
  { ...gatewayEnv, PORT: String(gatewayPort) },
  `http://127.0.0.1:${gatewayPort}/health`
)
const gatewayUrl = `http://127.0.0.1:${gatewayPort}`

await seedBenchProfile(gatewayUrl)

// D: the default gateway but for the turn's commit, which waits for its WAL flush; a database of its own.
const syncDatabaseUrl = await database.createDatabase("bench_synchronous")
const synchronous = await startProcess(
  join(root, "src/main.ts"),
  { ...gatewayEnv, DATABASE_URL: syncDatabaseUrl, PORT: String(syncPort), RECORD_SYNCHRONOUS_COMMIT: "true" },
  `http://127.0.0.1:${syncPort}/health`
)
await seedBenchProfile(`http://127.0.0.1:${syncPort}`)

// P2 compares time to first token with the extraction worker busy and idle.
const extracting = await startProcess(
  join(root, "src/main.ts"),
  {
    ...gatewayEnv,
    DATABASE_URL: extractingDatabaseUrl,
    PORT: String(extractingPort),
    EXTRACTION_CONCURRENCY: "2",
    EXTRACTION_BASE_URL: `${mock.url}/v1`
  },
  `http://127.0.0.1:${extractingPort}/health`
)
await seedBenchProfile(`http://127.0.0.1:${extractingPort}`)

interface Arm {
  readonly name: string
  readonly url: string
  readonly headers?: Record<string, string>
  readonly skipInjection?: boolean
}
const userHeaders = { "x-service-id": BENCH_USER }
const arms: ReadonlyArray<Arm> = [
  { name: "A", url: `${mock.url}/v1` },
  { name: "B", url: `http://127.0.0.1:${barePort}/v1` },
  { name: "C", url: `${gatewayUrl}/v1`, headers: userHeaders },
  { name: "N", url: `${gatewayUrl}/v1`, headers: userHeaders, skipInjection: true },
  { name: "D", url: `http://127.0.0.1:${syncPort}/v1`, headers: userHeaders }
]

interface RoundStats {
  readonly p50: number
  readonly p99: number
  readonly rps: number
  readonly events: number
  readonly errors: number
}
interface CellResult {
  readonly id: string
  readonly description: string
  readonly metric: "latency" | "ttft" | "rps"
  readonly arms: Record<string, { readonly rounds: Array<RoundStats> }>
}

const summarize = (samples: Array<Sample>, elapsedMs: number, metric: CellResult["metric"]): RoundStats => {
  const ok = samples.filter((s) => s.ok)
  const values = ok.map((s) => (metric === "ttft" ? s.ttftMs : s.ms))
  return {
    p50: median(values),
    p99: percentile(values, 99),
    rps: ok.length / (elapsedMs / 1000),
    events: median(ok.map((s) => s.events)),
    errors: samples.length - ok.length
  }
}

const rounds = smoke ? 2 : 6 // the first is warm-up

const runCell = async (
  id: string,
  description: string,
  metric: CellResult["metric"],
  shape: Parameters<typeof mock.configure>[0],
  options: {
    readonly stream: boolean
    readonly concurrency: number
    readonly requests?: number
    readonly durationMs?: number
  },
  cellArms: ReadonlyArray<Arm> = arms
): Promise<CellResult> => {
  await mock.configure(shape)
  const result: CellResult = {
    id,
    description,
    metric,
    arms: Object.fromEntries(cellArms.map((arm) => [arm.name, { rounds: [] }]))
  }
  for (let round = 0; round < rounds; round++) {
    for (const arm of cellArms) {
      const { elapsedMs, samples } = await load({
        url: arm.url,
        body: chatBody(options.stream, { skipInjection: arm.skipInjection === true }),
        concurrency: options.concurrency,
        ...(arm.headers === undefined ? {} : { headers: arm.headers }),
        ...(options.requests === undefined ? {} : { requests: options.requests }),
        ...(options.durationMs === undefined ? {} : { durationMs: options.durationMs })
      })
      if (round > 0) result.arms[arm.name]!.rounds.push(summarize(samples, elapsedMs, metric))
    }
  }
  process.stdout.write(`  ${id} done\n`)
  return result
}

process.stdout.write(`benchmark (${smoke ? "smoke" : "full"}), taskset ${hasTaskset ? "on" : "off"}\n`)

// M1 first, while both proxies are fresh (after a warm-up): a process that has been through the
// throughput cell keeps the heap it grew there, and new streams would fit in it unseen.
// Half the streams are opened, then the other half: the slope between the two (RSS growth per extra
// stream) leaves out one-off growth such as V8 enlarging its young generation under the first burst.
const streamsOpen = smoke ? 50 : 500
const memoryOf = async (arm: Arm, pid: number) => {
  await mock.configure({ ttftMs: 0, chunks: 2, chunkMs: 1 })
  await load({
    url: arm.url,
    body: chatBody(true),
    concurrency: 16,
    requests: smoke ? 100 : 2000,
    ...(arm.headers === undefined ? {} : { headers: arm.headers })
  })
  await mock.configure({ ttftMs: 0, chunks: 12, chunkMs: 1000 })
  await sleep(500)
  const half = streamsOpen / 2
  const open = () =>
    load({
      url: arm.url,
      body: chatBody(true),
      concurrency: half,
      requests: half,
      ...(arm.headers === undefined ? {} : { headers: arm.headers })
    })
  const idleKiB = await rssKiB(pid)
  const first = open()
  await sleep(4000)
  const halfKiB = await rssKiB(pid)
  const second = open()
  await sleep(4000)
  const openKiB = await rssKiB(pid)
  await Promise.all([first, second])
  // Long enough for V8's memory reducer to give back what the burst took.
  await sleep(smoke ? 1000 : 15_000)
  const afterKiB = await rssKiB(pid)
  return {
    idleKiB,
    halfKiB,
    openKiB,
    afterKiB,
    perStreamKiB: (openKiB - halfKiB) / half,
    perStreamFromIdleKiB: (openKiB - idleKiB) / streamsOpen
  }
}
const memory = {
  streams: streamsOpen,
  B: await memoryOf(arms[1]!, bare.pid!),
  C: await memoryOf(arms[2]!, gateway.pid!)
}
process.stdout.write("  M1 done\n")

const cells: Array<CellResult> = [
  await runCell(
    "L0",
    "non-streaming, 0 ms mock, c=1",
    "latency",
    { latencyMs: 0 },
    { stream: false, concurrency: 1, requests: smoke ? 30 : 300 }
  ),
  await runCell(
    "L1",
    "non-streaming, 50 ms mock, c=1",
    "latency",
    { latencyMs: 50 },
    { stream: false, concurrency: 1, requests: smoke ? 5 : 40 }
  ),
  await runCell(
    "T1",
    "throughput, 20 ms mock, c=64",
    "rps",
    { latencyMs: 20 },
    { stream: false, concurrency: 64, durationMs: smoke ? 500 : 4000 }
  ),
  await runCell(
    "S1",
    "streaming, 50 ms first token + 20 chunks × 10 ms, c=1",
    "ttft",
    { ttftMs: 50, chunks: 20, chunkMs: 10 },
    { stream: true, concurrency: 1, requests: smoke ? 3 : 15 }
  )
]

// P2, with the gateways' own metrics read before and after: they tell whether a difference comes from
// the gateway (its own overhead, its event loop) or from the provider's first chunk arriving later.
const gatewayUrls = { C: gatewayUrl, E: `http://127.0.0.1:${extractingPort}` }
const scrape = async (baseUrl: string) => (await (await fetch(`${baseUrl}/metrics`)).text()).split("\n")
const sampleOf = (lines: ReadonlyArray<string>, series: string) =>
  lines
    .filter((line) => line.startsWith(series))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0)
// E has served nothing yet: warm it up (as the other cells warmed C) before the window opens.
await mock.configure({ ttftMs: 0, chunks: 2, chunkMs: 1 })
await load({
  url: `${gatewayUrls.E}/v1`,
  body: chatBody(true),
  concurrency: 4,
  requests: 40,
  headers: { "x-service-id": BENCH_USER }
})
const p2Before = { C: await scrape(gatewayUrls.C), E: await scrape(gatewayUrls.E) }
cells.push(
  await runCell(
    "P2",
    "streaming TTFT, extraction worker off (C) vs on (E), c=4",
    "ttft",
    { ttftMs: 50, chunks: 20, chunkMs: 10, latencyMs: 0 },
    { stream: true, concurrency: 4, requests: smoke ? 8 : 60 },
    [arms[2]!, { name: "E", url: `${gatewayUrls.E}/v1`, headers: { "x-service-id": BENCH_USER } }]
  )
)
// Read once after P2: each scrape restarts the event-loop windows, which now cover P2 exactly.
const p2After = { C: await scrape(gatewayUrls.C), E: await scrape(gatewayUrls.E) }
/** Mean milliseconds per request of a stage during P2, from the gateway's histograms. */
const p2Stage = (arm: "C" | "E", name: string) => {
  const sum = sampleOf(p2After[arm], `${name}_sum`) - sampleOf(p2Before[arm], `${name}_sum`)
  const count = sampleOf(p2After[arm], `${name}_count`) - sampleOf(p2Before[arm], `${name}_count`)
  return (sum / Math.max(1, count)) * 1000
}
const p2Loop = (arm: "C" | "E") => ({
  overheadMs: p2Stage(arm, "gateway_overhead_seconds"),
  firstChunkMs: p2Stage(arm, "gateway_stream_first_chunk_seconds"),
  loopDelayP99Ms: sampleOf(p2After[arm], "gateway_event_loop_delay_p99_seconds ") * 1000,
  loopBusy: sampleOf(p2After[arm], "gateway_event_loop_utilization ")
})
const p2Inside = { off: p2Loop("C"), on: p2Loop("E") }

await Promise.all([stop(gateway), stop(extracting), stop(synchronous), stop(bare)])
await mock.close()
await database.close()

// ---- the report --------------------------------------------------------------------------------

const statOf = (cell: CellResult, arm: string, key: "p50" | "p99" | "rps") => {
  const values = cell.arms[arm]?.rounds.map((round) => round[key]) ?? []
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) }
}

const fmt = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a")
const rows: Array<string> = []
const verdicts: Array<string> = []
const summary: Record<string, unknown> = {}

for (const cell of cells.filter((c) => c.metric !== "rps" && c.id !== "P2")) {
  for (const key of ["p50", "p99"] as const) {
    const [a, b, c, n, d] = ["A", "B", "C", "N", "D"].map((arm) => statOf(cell, arm, key))
    rows.push(
      `| ${cell.id} ${cell.metric === "ttft" ? "TTFT" : "latency"} ${key} (ms) | ${fmt(a!.median)} | ${fmt(b!.median)} | ${fmt(c!.median)} [${fmt(c!.min)}–${fmt(c!.max)}] | ${fmt(n!.median)} | ${fmt(d!.median)} | ${fmt(c!.median - a!.median)} | ${fmt(b!.median - a!.median)} | ${fmt(c!.median - n!.median)} | ${fmt(d!.median - c!.median)} |`
    )
    summary[`${cell.id}.${key}`] = {
      A: a,
      B: b,
      C: c,
      N: n,
      D: d,
      CminusA: c!.median - a!.median,
      BminusA: b!.median - a!.median,
      CminusB: c!.median - b!.median,
      CminusN: c!.median - n!.median,
      DminusC: d!.median - c!.median
    }
  }
}
const t1 = cells.find((c) => c.id === "T1")!
const [ta, tb, tc, tn, td] = ["A", "B", "C", "N", "D"].map((arm) => statOf(t1, arm, "rps"))
rows.push(
  `| T1 throughput (req/s) | ${fmt(ta!.median, 0)} | ${fmt(tb!.median, 0)} | ${fmt(tc!.median, 0)} [${fmt(tc!.min, 0)}–${fmt(tc!.max, 0)}] | ${fmt(tn!.median, 0)} | ${fmt(td!.median, 0)} | C/A ${fmt(tc!.median / ta!.median, 2)} | B/A ${fmt(tb!.median / ta!.median, 2)} | C/N ${fmt(tc!.median / tn!.median, 2)} | D/C ${fmt(td!.median / tc!.median, 2)} |`
)
summary["T1.rps"] = { A: ta, B: tb, C: tc, N: tn, D: td, CoverB: tc!.median / tb!.median }
const p2 = cells.find((c) => c.id === "P2")!
const [off, on] = ["C", "E"].map((arm) => statOf(p2, arm, "p50"))
rows.push(
  `| P2 TTFT p50, extraction off / on (ms) | | | ${fmt(off!.median)} [${fmt(off!.min)}–${fmt(off!.max)}] / ${fmt(on!.median)} [${fmt(on!.min)}–${fmt(on!.max)}] | | | on − off ${fmt(on!.median - off!.median)} | | | |`
)
summary["P2.ttft"] = { off, on, inside: p2Inside }
const inside = (key: keyof typeof p2Inside.off, digits: number) =>
  `${fmt(p2Inside.off[key], digits)} / ${fmt(p2Inside.on[key], digits)}`
rows.push(
  `| P2 inside the gateway (means), off / on: overhead (ms) · first chunk relayed (ms) · loop delay p99 (ms) · loop busy | | | ${inside("overheadMs", 3)} · ${inside("firstChunkMs", 1)} · ${inside("loopDelayP99Ms", 1)} · ${inside("loopBusy", 2)} | | | | | | |`
)
rows.push(
  `| M1 RSS per open stream, slope ${streamsOpen / 2} → ${streamsOpen} streams (KiB) | | ${fmt(memory.B.perStreamKiB, 1)} | ${fmt(memory.C.perStreamKiB, 1)} | | | | | | |`
)
rows.push(
  `| M1 RSS per open stream, idle → ${streamsOpen} streams (KiB) | | ${fmt(memory.B.perStreamFromIdleKiB, 1)} | ${fmt(memory.C.perStreamFromIdleKiB, 1)} | | | | | | |`
)
const rssPath = (m: typeof memory.B) =>
  [m.idleKiB, m.halfKiB, m.openKiB, m.afterKiB].map((kib) => fmt(kib / 1024, 1)).join(" → ")
rows.push(`| M1 RSS idle → half → all open → after (MiB) | | ${rssPath(memory.B)} | ${rssPath(memory.C)} | | | | | | |`)
summary["M1"] = memory

const s1 = cells.find((c) => c.id === "S1")!
const eventsA = median(s1.arms["A"]!.rounds.map((r) => r.events))
const eventsC = median(s1.arms["C"]!.rounds.map((r) => r.events))
const errors = cells.flatMap((cell) =>
  Object.entries(cell.arms).flatMap(([arm, { rounds }]) =>
    rounds.filter((r) => r.errors > 0).map(() => `${cell.id}/${arm}`)
  )
)

if (!smoke) {
  const check = (name: string, pass: boolean, detail: string) =>
    verdicts.push(`- ${pass ? "PASS" : "MISS"} ${name}: ${detail}`)
  for (const id of ["L0", "L1"]) {
    const p50 = summary[`${id}.p50`] as { CminusA: number; BminusA: number }
    const p99 = summary[`${id}.p99`] as { CminusA: number }
    check(
      `${id} added p50 ≤ 2 × bare hop`,
      p50.CminusA <= 2 * p50.BminusA,
      `C−A ${fmt(p50.CminusA)} ms vs 2×(B−A) ${fmt(2 * p50.BminusA)} ms`
    )
    check(`${id} added p50 ≤ 0.5 ms`, p50.CminusA <= 0.5, `${fmt(p50.CminusA)} ms`)
    check(`${id} added p99 ≤ 3 ms`, p99.CminusA <= 3, `${fmt(p99.CminusA)} ms`)
  }
  const s1p50 = summary["S1.p50"] as { CminusA: number }
  check("S1 added TTFT p50 ≤ 1 ms", s1p50.CminusA <= 1, `${fmt(s1p50.CminusA)} ms`)
  check("S1 every chunk relayed", eventsC === eventsA, `${eventsC} events through the gateway, ${eventsA} direct`)
  check("T1 throughput ≥ 0.8 × bare", tc!.median / tb!.median >= 0.8, `C/B ${fmt(tc!.median / tb!.median, 2)}`)
  check("M1 ≤ 48 KiB per open stream", memory.C.perStreamKiB <= 48, `${fmt(memory.C.perStreamKiB, 1)} KiB`)
  check("M1 idle RSS ≤ 250 MiB", memory.C.idleKiB <= 250 * 1024, `${fmt(memory.C.idleKiB / 1024, 1)} MiB`)
  check(
    "M1 RSS back within 10% of idle",
    memory.C.afterKiB <= memory.C.idleKiB * 1.1,
    `${fmt(memory.C.idleKiB / 1024, 1)} → ${fmt(memory.C.afterKiB / 1024, 1)} MiB`
  )
  check(
    "P2 TTFT with extraction on within the noise of off",
    on!.median <= off!.max + (off!.max - off!.min) || on!.median - off!.median <= 0.5,
    `on ${fmt(on!.median)} ms, off ${fmt(off!.median)} ms [${fmt(off!.min)}–${fmt(off!.max)}]`
  )
}

const environment = `Node ${process.version}, commit ${commit}, nproc ${cpus().length}, ${cpus()[0]?.model ?? "cpu"}, proxies on CPU 1 and mock/loader/PostgreSQL on CPU 0: ${hasTaskset ? "yes" : "no (taskset missing)"}, ${rounds - 1} measured rounds after 1 warm-up`
const markdown = [
  `Benchmark ${smoke ? "(smoke: too short for verdicts)" : ""} — ${new Date().toISOString()}`,
  "",
  environment,
  "",
  "| Cell | A direct | B bare proxy | C gateway [round spread] | N no memory | D synchronous commit | C − A | B − A | C − N | D − C |",
  "|---|---|---|---|---|---|---|---|---|---|",
  ...rows,
  "",
  `Medians of round medians (p50) and of round p99s. Errors: ${errors.length === 0 ? "none" : errors.join(", ")}. S1 events per stream: direct ${eventsA}, gateway ${eventsC}.`,
  ...(verdicts.length > 0 ? ["", "Targets:", ...verdicts] : [])
].join("\n")

process.stdout.write(`\n${markdown}\n`)
if (!smoke) {
  await mkdir(join(root, "bench/results"), { recursive: true })
  await writeFile(
    join(root, "bench/results/latest.json"),
    JSON.stringify({ environment, smoke, summary, cells, memory, errors }, null, 2)
  )
  await writeFile(join(root, "bench/results/latest.md"), `${markdown}\n`)
}
if (errors.length > 0 || (smoke && eventsC !== eventsA)) process.exitCode = 1
