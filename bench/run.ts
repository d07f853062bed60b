/**
 * The benchmark: its arms measured in one run, interleaved in rounds (A B F C N D P A B …, the first
 * round discarded as warm-up):
 *   A  direct to the mock provider
 *   B  a bare Node proxy that rewrites the body (bench/bareProxy.ts): the floor for a Node hop
 *   F  the same proxy on Effect's HTTP server and router (bench/effectFloorProxy.ts): the floor for
 *      a proxy on the gateway's stack; C − F is the gateway's own work
 *   C  the gateway (`node src/main.ts`, default configuration) with a real PostgreSQL profile
 *      (traits + 50 memories)
 *   N  the same gateway, each request with `service.skipInjection` (the profile is still loaded and the
 *      turn recorded): C − N is what ranking and injecting cost
 *   D  a second gateway with RECORD_SYNCHRONOUS_COMMIT=true: D − C is what waiting for the turn's
 *      WAL flush costs
 *   P  Portkey's open-source gateway (bench/portkey.ts; installed on first use, left out without a
 *      registry or with `--no-portkey`, and in the smoke run); not in S1, where it fails every stream
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
import { PORTKEY_VERSION, startPortkey } from "./portkey.ts"
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

const [barePort, floorPort, gatewayPort, extractingPort, syncPort] = await Promise.all([
  freePort(),
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
const floor = await startProcess(
  join(root, "bench/effectFloorProxy.ts"),
  { UPSTREAM: mock.url, PORT: String(floorPort) },
  `http://127.0.0.1:${floorPort}/`
)
const portkey = smoke || process.argv.includes("--no-portkey") ? undefined : await startPortkey(mock.url)
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
  { name: "F", url: `http://127.0.0.1:${floorPort}/v1` },
  { name: "C", url: `${gatewayUrl}/v1`, headers: userHeaders },
  { name: "N", url: `${gatewayUrl}/v1`, headers: userHeaders, skipInjection: true },
  { name: "D", url: `http://127.0.0.1:${syncPort}/v1`, headers: userHeaders },
  ...(portkey === undefined ? [] : [{ name: "P", url: portkey.url, headers: portkey.headers }])
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
const armNamed = (name: string) => arms.find((arm) => arm.name === name)!
const memory = {
  streams: streamsOpen,
  B: await memoryOf(armNamed("B"), bare.pid!),
  C: await memoryOf(armNamed("C"), gateway.pid!)
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
    { stream: true, concurrency: 1, requests: smoke ? 3 : 15 },
    // Portkey 1.15.2 answers every stream from this mock with a 500 (a TypeError in its `updateHeaders`).
    arms.filter((arm) => arm.name !== "P")
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
    [armNamed("C"), { name: "E", url: `${gatewayUrls.E}/v1`, headers: { "x-service-id": BENCH_USER } }]
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

await Promise.all(
  [gateway, extracting, synchronous, bare, floor, ...(portkey === undefined ? [] : [portkey.child])].map(stop)
)
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

const ARMS = ["A", "B", "F", "C", "N", "D", "P"] as const
type ArmName = (typeof ARMS)[number]
/** The columns after the arms': differences of medians (latency) or ratios (throughput). */
const DIFFERENCES: ReadonlyArray<readonly [ArmName, ArmName]> = [
  ["C", "A"],
  ["B", "A"],
  ["F", "A"],
  ["P", "A"],
  ["C", "F"],
  ["C", "N"],
  ["D", "C"]
]
const statsOf = (cell: CellResult, key: "p50" | "p99" | "rps") =>
  Object.fromEntries(ARMS.map((arm) => [arm, statOf(cell, arm, key)])) as Record<ArmName, ReturnType<typeof statOf>>
const armCells = (stats: Record<ArmName, ReturnType<typeof statOf>>, digits: number) =>
  ARMS.map((arm) =>
    arm === "C"
      ? `${fmt(stats.C.median, digits)} [${fmt(stats.C.min, digits)}–${fmt(stats.C.max, digits)}]`
      : fmt(stats[arm].median, digits)
  )

for (const cell of cells.filter((c) => c.metric !== "rps" && c.id !== "P2")) {
  for (const key of ["p50", "p99"] as const) {
    const stats = statsOf(cell, key)
    const differences = DIFFERENCES.map(([x, y]) => stats[x].median - stats[y].median)
    rows.push(
      `| ${cell.id} ${cell.metric === "ttft" ? "TTFT" : "latency"} ${key} (ms) | ${[...armCells(stats, 3), ...differences.map((d) => fmt(d))].join(" | ")} |`
    )
    summary[`${cell.id}.${key}`] = {
      ...stats,
      ...Object.fromEntries(DIFFERENCES.map(([x, y], i) => [`${x}minus${y}`, differences[i]]))
    }
  }
}
const t1 = cells.find((c) => c.id === "T1")!
const t1Stats = statsOf(t1, "rps")
const ratios = DIFFERENCES.map(([x, y]) => t1Stats[x].median / t1Stats[y].median)
rows.push(
  `| T1 throughput (req/s; ratios) | ${[...armCells(t1Stats, 0), ...DIFFERENCES.map(([x, y], i) => `${x}/${y} ${fmt(ratios[i]!, 2)}`)].join(" | ")} |`
)
summary["T1.rps"] = { ...t1Stats, CoverB: t1Stats.C.median / t1Stats.B.median }
/** A row with a figure in the gateway's column only. */
const gatewayRow = (label: string, bare: string, gateway: string) =>
  `| ${label} | | ${bare} | | ${gateway} | ${Array.from({ length: ARMS.length - 4 + DIFFERENCES.length }, () => "").join(" | ")} |`
const p2 = cells.find((c) => c.id === "P2")!
const [off, on] = ["C", "E"].map((arm) => statOf(p2, arm, "p50"))
rows.push(
  gatewayRow(
    "P2 TTFT p50, extraction off / on (ms); on − off",
    "",
    `${fmt(off!.median)} [${fmt(off!.min)}–${fmt(off!.max)}] / ${fmt(on!.median)} [${fmt(on!.min)}–${fmt(on!.max)}]; ${fmt(on!.median - off!.median)}`
  )
)
summary["P2.ttft"] = { off, on, inside: p2Inside }
const inside = (key: keyof typeof p2Inside.off, digits: number) =>
  `${fmt(p2Inside.off[key], digits)} / ${fmt(p2Inside.on[key], digits)}`
rows.push(
  gatewayRow(
    "P2 inside the gateway (means), off / on: overhead (ms) · first chunk relayed (ms) · loop delay p99 (ms) · loop busy",
    "",
    `${inside("overheadMs", 3)} · ${inside("firstChunkMs", 1)} · ${inside("loopDelayP99Ms", 1)} · ${inside("loopBusy", 2)}`
  )
)
rows.push(
  gatewayRow(
    `M1 RSS per open stream, slope ${streamsOpen / 2} → ${streamsOpen} streams (KiB)`,
    fmt(memory.B.perStreamKiB, 1),
    fmt(memory.C.perStreamKiB, 1)
  )
)
rows.push(
  gatewayRow(
    `M1 RSS per open stream, idle → ${streamsOpen} streams (KiB)`,
    fmt(memory.B.perStreamFromIdleKiB, 1),
    fmt(memory.C.perStreamFromIdleKiB, 1)
  )
)
const rssPath = (m: typeof memory.B) =>
  [m.idleKiB, m.halfKiB, m.openKiB, m.afterKiB].map((kib) => fmt(kib / 1024, 1)).join(" → ")
rows.push(gatewayRow("M1 RSS idle → half → all open → after (MiB)", rssPath(memory.B), rssPath(memory.C)))
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
  // Issue 25's targets: added latency against the provider directly, and against Portkey in the same run.
  const l0p50 = summary["L0.p50"] as { CminusA: number; PminusA: number }
  const l0p99 = summary["L0.p99"] as { CminusA: number }
  check("L0 added p50 ≤ 1 ms", l0p50.CminusA <= 1, `${fmt(l0p50.CminusA)} ms`)
  check(
    "L0 added p50 ≤ Portkey's",
    l0p50.CminusA <= l0p50.PminusA,
    portkey === undefined ? "Portkey not measured" : `C−A ${fmt(l0p50.CminusA)} ms vs P−A ${fmt(l0p50.PminusA)} ms`
  )
  check("L0 added p99 ≤ 3 ms", l0p99.CminusA <= 3, `${fmt(l0p99.CminusA)} ms`)
  const s1p50 = summary["S1.p50"] as { CminusA: number }
  check("S1 added TTFT p50 ≤ 1 ms", s1p50.CminusA <= 1, `${fmt(s1p50.CminusA)} ms`)
  check("S1 every chunk relayed", eventsC === eventsA, `${eventsC} events through the gateway, ${eventsA} direct`)
  const overBare = t1Stats.C.median / t1Stats.B.median
  check("T1 throughput ≥ 0.3 × bare", overBare >= 0.3, `C/B ${fmt(overBare, 2)}`)
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
  `| Cell | A direct | B bare proxy | F Effect floor | C gateway [round spread] | N no memory | D synchronous commit | P Portkey ${portkey === undefined ? "(not measured)" : PORTKEY_VERSION} | ${DIFFERENCES.map(([x, y]) => `${x} − ${y}`).join(" | ")} |`,
  `|${Array.from({ length: 1 + ARMS.length + DIFFERENCES.length }, () => "---").join("|")}|`,
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
