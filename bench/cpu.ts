/**
 * Where the gateway's CPU goes, in three parts, on one gateway (`node src/main.ts`, serving the
 * main benchmark's user: a summary, five traits, fifty memories) and the bare proxy (bench/bareProxy.ts):
 *   1. CPU ms per request, from /proc/<pid>/stat (utime + stime, all threads) before and after a
 *      fixed number of requests under closed-loop load, for five arms in interleaved rounds (a
 *      different arm first each round, the first round discarded as warm-up): a chat completion
 *      with injection, the same with `service.skipInjection`, GET /v1/models, GET /health, and the
 *      bare proxy. The differences between the gateway's arms, round by round, give the breakdown.
 *   2. A CPU profile of the gateway's main thread under T1's load (64 connections, a 20 ms mock),
 *      taken through the inspector, its self time split by where the code lives.
 *   3. Heap per open stream: the gateway's and the bare proxy's `process.memoryUsage()` after a
 *      forced GC, idle, with half and with all of N slow streams open.
 * Parts 2 and 3 talk to the processes through the inspector (`--inspect` on a loopback port, given
 * to the benchmarked processes only), attached after part 1 has been measured.
 *
 *   npm run bench:cpu              # the full run, about 4 minutes; writes bench/results/cpu.{json,md}
 *   npm run bench:cpu -- --smoke   # short parts, under a minute: checks that it works (writes nothing)
 *   npm run bench:cpu -- --gateway /tmp/previous   # another checkout's gateway (its node_modules linked)
 */
import { type ChildProcess, execFileSync } from "node:child_process"
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { cpus, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { EmbeddedPostgres } from "../src/db/EmbeddedPostgres.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { connectInspector, memoryAfterGc } from "./inspector.ts"
import { load, median } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { openStreams } from "./openStreams.ts"
import {
  commit,
  cpuMs,
  freePort,
  gatewayEnvironment,
  hasTaskset,
  root,
  rssKiB,
  startProcess,
  stop,
  threadCpuMs
} from "./processes.ts"
import { BUCKETS, type CpuProfile, splitProfile } from "./profileBuckets.ts"

const smoke = process.argv.includes("--smoke")
/** `--gateway <checkout>` measures the gateway of another checkout (e.g. the release before); this one by default. */
const gatewayFlag = process.argv.indexOf("--gateway")
const checkout = gatewayFlag === -1 ? root : `${resolve(process.argv[gatewayFlag + 1] ?? ".")}/`
const ROUNDS = smoke ? 2 : 6 // the first is warm-up
const REQUESTS = smoke ? 200 : 2000
const CONCURRENCY = 16
const PROFILE_MS = smoke ? 1000 : 8000
const STREAMS = smoke ? 50 : 500

// ---- the processes ------------------------------------------------------------------------------

// Everything started is stopped at the end, also when a part fails.
const scope = Effect.runSync(Scope.make())
const dataDir = await mkdtemp(join(tmpdir(), "gateway-cpu-"))
const children: Array<ChildProcess> = []
const closers: Array<() => Promise<void>> = []
const stopAll = async () => {
  await Promise.all(children.map(stop))
  for (const close of closers) await close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await rm(dataDir, { recursive: true, force: true })
}

const inspect = (port: number) => ({ NODE_OPTIONS: `--inspect=127.0.0.1:${port}` })
const startAll = async () => {
  await chmod(dataDir, 0o755)
  const pgContext = await Effect.runPromise(Layer.buildWithScope(EmbeddedPostgres.layer(dataDir), scope))
  const databaseUrl = Redacted.value(Context.get(pgContext, EmbeddedPostgres).url)
  const mock = await startMockUpstream()
  closers.push(mock.close)
  const [barePort, bareInspectPort, gatewayPort, gatewayInspectPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort()
  ])
  const bare = await startProcess(
    join(root, "bench/bareProxy.ts"),
    { UPSTREAM: mock.url, PORT: String(barePort), ...inspect(bareInspectPort) },
    `http://127.0.0.1:${barePort}/`
  )
  children.push(bare)
  const gateway = await startProcess(
    join(checkout, "src/main.ts"),
    {
      ...gatewayEnvironment(databaseUrl, mock.url),
      ...(process.env["EMBEDDINGS"] === undefined ? {} : { EMBEDDINGS: process.env["EMBEDDINGS"] }),
      PORT: String(gatewayPort),
      ...inspect(gatewayInspectPort)
    },
    `http://127.0.0.1:${gatewayPort}/health`,
    (text) => process.stderr.write(text)
  )
  children.push(gateway)
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`
  await seedBenchProfile(gatewayUrl)
  return {
    mock,
    gateway: { pid: gateway.pid!, url: gatewayUrl, inspectPort: gatewayInspectPort },
    bare: { pid: bare.pid!, url: `http://127.0.0.1:${barePort}`, inspectPort: bareInspectPort }
  }
}
type Setup = Awaited<ReturnType<typeof startAll>>

// ---- 1. CPU per request ---------------------------------------------------------------------------

interface Arm {
  readonly name: "chat" | "skip" | "models" | "health" | "bare"
  readonly label: string
  readonly pid: number
  readonly url: string
  readonly path?: string
  readonly method?: "GET"
  readonly body?: string
  readonly headers?: Record<string, string>
}
const userHeaders = { "x-service-id": BENCH_USER }
const skipInjectionBody = JSON.stringify({ ...JSON.parse(chatBody(false)), service: { skipInjection: true } })
const armsOf = ({ gateway, bare }: Setup): ReadonlyArray<Arm> => [
  {
    name: "chat",
    label: "gateway, chat completion with injection",
    pid: gateway.pid,
    url: `${gateway.url}/v1`,
    body: chatBody(false),
    headers: userHeaders
  },
  {
    name: "skip",
    label: "gateway, chat completion with `service.skipInjection`",
    pid: gateway.pid,
    url: `${gateway.url}/v1`,
    body: skipInjectionBody,
    headers: userHeaders
  },
  {
    name: "models",
    label: "gateway, GET /v1/models (forwarded, no pipeline)",
    pid: gateway.pid,
    url: `${gateway.url}/v1`,
    path: "/models",
    method: "GET"
  },
  { name: "health", label: "gateway, GET /health", pid: gateway.pid, url: gateway.url, path: "/health", method: "GET" },
  { name: "bare", label: "bare proxy, chat completion", pid: bare.pid, url: `${bare.url}/v1`, body: chatBody(false) }
]

interface ArmRound {
  readonly cpuMs: number
  /** CPU ms per request of each thread name. */
  readonly threadsMs: Record<string, number>
  readonly p50Ms: number
  readonly errors: number
}

const perRequest = (before: Record<string, number>, after: Record<string, number>, requests: number) =>
  Object.fromEntries(Object.keys(after).map((name) => [name, (after[name]! - (before[name] ?? 0)) / requests]))

const cpuPerRequest = async (setup: Setup) => {
  const arms = armsOf(setup)
  await setup.mock.configure({ latencyMs: 0 })
  const rounds = new Map<Arm["name"], Array<ArmRound>>(arms.map((arm) => [arm.name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const arm of [...arms.slice(round % arms.length), ...arms.slice(0, round % arms.length)]) {
      const [cpuBefore, threadsBefore] = [await cpuMs(arm.pid), await threadCpuMs(arm.pid)]
      const { samples } = await load({
        url: arm.url,
        concurrency: CONCURRENCY,
        requests: REQUESTS,
        ...(arm.path === undefined ? {} : { path: arm.path }),
        ...(arm.method === undefined ? {} : { method: arm.method }),
        ...(arm.body === undefined ? {} : { body: arm.body }),
        ...(arm.headers === undefined ? {} : { headers: arm.headers })
      })
      const [cpuAfter, threadsAfter] = [await cpuMs(arm.pid), await threadCpuMs(arm.pid)]
      if (round === 0) continue
      rounds.get(arm.name)!.push({
        cpuMs: (cpuAfter - cpuBefore) / REQUESTS,
        threadsMs: perRequest(threadsBefore, threadsAfter, REQUESTS),
        p50Ms: median(samples.filter((s) => s.ok).map((s) => s.ms)),
        errors: samples.filter((s) => !s.ok).length
      })
    }
  }
  process.stdout.write("  CPU per request done\n")
  return { arms, rounds }
}

// ---- 2. a CPU profile under T1's load -----------------------------------------------------------------

const profileUnderLoad = async ({ mock, gateway }: Setup) => {
  await mock.configure({ latencyMs: 20 })
  const t1 = { url: `${gateway.url}/v1`, body: chatBody(false), headers: userHeaders, concurrency: 64 }
  await load({ ...t1, durationMs: smoke ? 500 : 2000 })
  const inspector = await connectInspector(gateway.inspectPort)
  await inspector.send("Profiler.enable")
  await inspector.send("Profiler.setSamplingInterval", { interval: 500 })
  const threadsBefore = await threadCpuMs(gateway.pid)
  await inspector.send("Profiler.start")
  const profiled = await load({ ...t1, durationMs: PROFILE_MS })
  const { profile } = await inspector.send<{ profile: CpuProfile }>("Profiler.stop")
  const threadsAfter = await threadCpuMs(gateway.pid)
  await inspector.send("Profiler.disable")
  inspector.close()
  const requests = profiled.samples.filter((s) => s.ok).length
  const path = join(tmpdir(), `gateway-T1-${Date.now()}.cpuprofile`)
  await writeFile(path, JSON.stringify(profile))
  process.stdout.write(`  profile done (${path})\n`)
  return {
    requests,
    errors: profiled.samples.length - requests,
    threadsMs: perRequest(threadsBefore, threadsAfter, requests),
    split: splitProfile(profile, checkout),
    path
  }
}

// ---- 3. heap per open stream ------------------------------------------------------------------------

const heapOf = async (target: Setup["gateway"], headers: Record<string, string>) => {
  const inspector = await connectInspector(target.inspectPort)
  const reading = async () => ({ ...(await memoryAfterGc(inspector)), rssKiB: await rssKiB(target.pid) })
  const stream = { url: `${target.url}/v1`, body: chatBody(true), headers, count: STREAMS / 2 }
  const idle = await reading()
  const first = await openStreams(stream)
  const half = await reading()
  const second = await openStreams(stream)
  const all = await reading()
  await Promise.all([first.close(), second.close()])
  inspector.close()
  const slope = (key: "heapUsed" | "external" | "arrayBuffers") => (all[key] - half[key]) / 1024 / (STREAMS / 2)
  return {
    idle,
    half,
    all,
    perStreamKiB: {
      heapUsed: slope("heapUsed"),
      external: slope("external"),
      arrayBuffers: slope("arrayBuffers"),
      rss: (all.rssKiB - half.rssKiB) / (STREAMS / 2)
    }
  }
}

const heapPerStream = async ({ mock, gateway, bare }: Setup) => {
  // The mock sends its first chunk at once, then nothing for a minute: the streams stay open until closed.
  await mock.configure({ ttftMs: 0, chunks: 2, chunkMs: 60_000 })
  const heap = { streams: STREAMS, gateway: await heapOf(gateway, userHeaders), bare: await heapOf(bare, {}) }
  process.stdout.write("  heap per stream done\n")
  return heap
}

const measured = await (async () => {
  const setup = await startAll()
  process.stdout.write(`cpu benchmark (${smoke ? "smoke" : "full"}), taskset ${hasTaskset ? "on" : "off"}\n`)
  return { cpu: await cpuPerRequest(setup), profiled: await profileUnderLoad(setup), heap: await heapPerStream(setup) }
})().finally(stopAll)
const { arms, rounds: cpuRounds } = measured.cpu
const { heap } = measured
const { split, requests: profiledRequests, threadsMs: profileThreads, path: profilePath } = measured.profiled

// ---- the report --------------------------------------------------------------------------------------

const fmt = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a")
const spread = (values: ReadonlyArray<number>) => ({
  median: median(values),
  min: Math.min(...values),
  max: Math.max(...values)
})
const cpuOf = (name: Arm["name"]) => cpuRounds.get(name)!.map((r) => r.cpuMs)
const threadKind = (name: string) =>
  name === "MainThread" || name === "node"
    ? "main"
    : name === "WorkerThread"
      ? "worker"
      : name === "V8Worker"
        ? "v8"
        : "other"
const threadShares = (threads: Record<string, number>) => {
  const kinds = { main: 0, worker: 0, v8: 0, other: 0 }
  for (const [name, ms] of Object.entries(threads)) kinds[threadKind(name)] += ms
  return kinds
}
const range = (s: ReturnType<typeof spread>) => `${fmt(s.median)} [${fmt(s.min)}–${fmt(s.max)}]`

const cpuSummary = Object.fromEntries(
  arms.map((arm) => {
    const rounds = cpuRounds.get(arm.name)!
    const kinds = rounds.map((r) => threadShares(r.threadsMs))
    return [
      arm.name,
      {
        label: arm.label,
        cpuMs: spread(cpuOf(arm.name)),
        p50Ms: median(rounds.map((r) => r.p50Ms)),
        threadsMs: {
          main: median(kinds.map((k) => k.main)),
          worker: median(kinds.map((k) => k.worker)),
          v8: median(kinds.map((k) => k.v8)),
          other: median(kinds.map((k) => k.other))
        },
        errors: rounds.reduce((sum, r) => sum + r.errors, 0)
      }
    ]
  })
)
const cpuRows = arms.map((arm) => {
  const s = cpuSummary[arm.name]!
  return `| ${s.label} | ${range(s.cpuMs)} | ${fmt(s.threadsMs.main)} · ${fmt(s.threadsMs.v8)} · ${fmt(s.threadsMs.worker)} · ${fmt(s.threadsMs.other)} | ${fmt(s.p50Ms)} |`
})

/** A difference between two arms, taken round by round (the arms of a round ran back to back). */
const difference = (a: Arm["name"], b: Arm["name"]) => spread(cpuOf(a).map((ms, i) => ms - cpuOf(b)[i]!))
const breakdown = [
  {
    part: "serving a request: Node's HTTP server, Effect's server, router and middleware, an HttpApi handler",
    derivation: "GET /health",
    ...spread(cpuOf("health"))
  },
  {
    part: "a call to the provider: building it, undici, relaying the answer",
    derivation: "GET /v1/models − GET /health",
    ...difference("models", "health")
  },
  {
    part: "the chat pipeline without injection: reading and checking the body, the user, forwarding the bigger body, recording the turn",
    derivation: "skipInjection − GET /v1/models",
    ...difference("skip", "models")
  },
  {
    part: "injection: the cached profile, ranking fifty memories, rendering, re-serialising the body",
    derivation: "with injection − skipInjection",
    ...difference("chat", "skip")
  },
  {
    part: "the gateway against the bare proxy, same request",
    derivation: "gateway with injection − bare proxy",
    ...difference("chat", "bare")
  }
]
const breakdownRows = breakdown.map(
  (b) => `| ${b.part} | ${b.derivation} | ${fmt(b.median)} [${fmt(b.min)}–${fmt(b.max)}] |`
)

const busy = split.busyMs
const profileRows = BUCKETS.map(
  (bucket) =>
    `| ${bucket} | ${fmt((100 * split.buckets[bucket]) / busy, 1)}% | ${fmt(split.buckets[bucket] / profiledRequests, 3)} |`
)
const topRows = split.top.map((f) => `| ${f.name} | ${f.where} | ${f.bucket} | ${fmt((100 * f.ms) / busy, 1)}% |`)
const profileKinds = threadShares(profileThreads)
const profileTotal = profileKinds.main + profileKinds.v8 + profileKinds.worker + profileKinds.other

const mib = (bytes: number) => fmt(bytes / 1024 / 1024, 1)
const heapRow = (name: string, h: typeof heap.gateway) =>
  `| ${name} | ${fmt(h.perStreamKiB.heapUsed, 1)} | ${fmt(h.perStreamKiB.external, 1)} | ${fmt(h.perStreamKiB.rss, 1)} | ${mib(h.idle.heapUsed)} → ${mib(h.half.heapUsed)} → ${mib(h.all.heapUsed)} | ${fmt(h.idle.rssKiB / 1024, 1)} → ${fmt(h.all.rssKiB / 1024, 1)} |`

const errors = [
  ...arms.filter((arm) => cpuSummary[arm.name]!.errors > 0).map((arm) => arm.name),
  ...(measured.profiled.errors > 0 ? ["profile"] : [])
]
const checkoutCommit = (() => {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: checkout, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim()
  } catch {
    return "unknown"
  }
})()
const environment = `Node ${process.version}, ${checkout === root ? `commit ${commit}` : `gateway of ${checkout} (commit ${checkoutCommit})`}, nproc ${cpus().length}, ${cpus()[0]?.model ?? "cpu"}, proxies on CPU 1 and mock/loader/PostgreSQL on CPU 0: ${hasTaskset ? "yes" : "no (taskset missing)"}`
const markdown = [
  `CPU benchmark (\`npm run bench:cpu\`)${smoke ? " (smoke: too short to quote)" : ""} — ${new Date().toISOString()}`,
  "",
  environment,
  "",
  `**CPU per request**: ${REQUESTS} requests per arm and round, ${CONCURRENCY} connections, a 0 ms mock, ${ROUNDS - 1} measured round${ROUNDS === 2 ? "" : "s"} after 1 warm-up, arms interleaved. CPU of the whole process (all threads) from /proc/<pid>/stat, split by thread: main (the event loop) · V8 helpers (concurrent GC, compilers) · worker threads (the embedding model) · other (libuv pool, inspector).`,
  "",
  `| Arm | CPU ms / request, median [rounds' range] | by thread: main · V8 · worker · other | p50 at ${CONCURRENCY} connections (ms) |`,
  "|---|---|---|---|",
  ...cpuRows,
  "",
  "**Breakdown**, from the differences between the arms (each round's difference, then the median and range over rounds; a difference can be within the noise of its two arms):",
  "",
  "| What it adds | Derived as | CPU ms / request |",
  "|---|---|---|",
  ...breakdownRows,
  "",
  `**CPU profile of the gateway's main thread under T1's load** (64 connections, a 20 ms mock, ${fmt(PROFILE_MS / 1000, 0)} s, ${profiledRequests} requests, sampled every 0.5 ms through the inspector): self time by where the code lives; functions without a script of their own (V8 builtins, native bindings such as socket writes) count for their caller. Busy ${fmt(busy, 0)} ms, idle ${fmt(split.idleMs, 0)} ms. The whole process used ${fmt(profileTotal)} ms of CPU per request in this window (the profiler's own cost included): main thread ${fmt(profileKinds.main)}, V8 helpers ${fmt(profileKinds.v8)}, worker threads ${fmt(profileKinds.worker)}, other ${fmt(profileKinds.other)}.`,
  "",
  "| Where | Share of the main thread's busy time | main-thread ms / request |",
  "|---|---|---|",
  ...profileRows,
  "",
  "Functions with the most self time:",
  "",
  "| Function | Where | Bucket | Share |",
  "|---|---|---|---|",
  ...topRows,
  "",
  `**Heap per open stream**: ${STREAMS / 2} then ${STREAMS} slow streams held open (each has received its first chunk), \`process.memoryUsage()\` read through the inspector after two forced full GCs; per stream is the slope between ${STREAMS / 2} and ${STREAMS}.`,
  "",
  "| Process | JS heap KiB / stream | outside the heap (external) KiB / stream | RSS KiB / stream | live JS heap idle → half → all (MiB) | RSS idle → all (MiB) |",
  "|---|---|---|---|---|---|",
  heapRow("gateway", heap.gateway),
  heapRow("bare proxy", heap.bare),
  "",
  `Errors: ${errors.length === 0 ? "none" : errors.join(", ")}. The raw profile: ${profilePath} (open it in Chrome DevTools, Performance tab).`
].join("\n")

process.stdout.write(`\n${markdown}\n`)
if (!smoke) {
  await mkdir(join(root, "bench/results"), { recursive: true })
  await writeFile(
    join(root, "bench/results/cpu.json"),
    `${JSON.stringify(
      {
        environment,
        settings: {
          rounds: ROUNDS,
          requests: REQUESTS,
          concurrency: CONCURRENCY,
          profileMs: PROFILE_MS,
          streams: STREAMS
        },
        cpu: { summary: cpuSummary, rounds: Object.fromEntries(cpuRounds) },
        breakdown,
        profile: {
          requests: profiledRequests,
          busyMs: busy,
          idleMs: split.idleMs,
          buckets: split.buckets,
          top: split.top,
          threadsMsPerRequest: profileThreads
        },
        heap,
        errors
      },
      null,
      2
    )}\n`
  )
  await writeFile(join(root, "bench/results/cpu.md"), `${markdown}\n`)
}
if (errors.length > 0) process.exitCode = 1
// The mock's slow streams still have their timers pending for up to a minute: nothing else is left to wait for.
process.exit()
