/**
 * Instructions per request, this checkout against another one, counted by valgrind's callgrind:
 * unlike time, the count does not move with what else the machine is doing (the same checkout
 * measured twice agrees within 0.2%), so a difference of a few percent is a real one. Each gateway
 * runs alone under callgrind with the main benchmark's profile and message, EMBEDDINGS=off (the
 * local model's threads would count their own start-up), a 0 ms mock and sequential requests;
 * counting starts after a warm-up and covers every thread of the process.
 *
 * No major garbage collection falls in the counted window: each gateway starts with a 1 GB initial
 * old generation (`--initial-old-space-size`), far above what a run promotes. A request promotes some
 * kilobytes, and under valgrind V8 otherwise ran a major collection every few hundred requests, at
 * hundreds of millions of instructions (scaled by the live heap, not by the window's requests):
 * whether one fell in the window moved the same checkout's figure by up to 30%. The figure counts the
 * requests' own work, their young-generation collections and the compiler's, alike for both checkouts.
 *
 * The warm-up is 1,000 requests: V8 optimizes most of the request path's functions between the
 * 400th and the 600th request (node --trace-opt: 300 to 380 compilations per hundred requests there,
 * 10 to 20 per hundred after the 700th), so a window after a shorter warm-up counts that burst, a
 * quarter of its instructions, rather than what a request costs. The window is 2,000 requests: a
 * young-generation collection (10-20 M instructions) comes every 150 to 200 requests, and in a window
 * of 300 one more or one fewer moved the figure by 1-2%.
 *
 *   git worktree add /tmp/previous <ref> && ln -s "$PWD/node_modules" /tmp/previous/node_modules
 *   npm run bench:instructions -- /tmp/previous            # needs valgrind (Debian: apt-get install valgrind)
 *   npm run bench:instructions -- /tmp/previous --smoke    # a short run: checks that it works
 *   npm run bench:instructions -- /tmp/previous --env CONTEXT_CACHE_FENCE_MS=0   # a setting for both gateways
 *   npm run bench:instructions -- /tmp/previous --keep /tmp/cg   # keeps the callgrind dumps (other_a, this, other_b)
 *   npm run bench:instructions -- /tmp/previous --warmup 3000    # a longer warm-up
 *
 * The dumps are for `callgrind_annotate --inclusive=yes <file>`: where the instructions go, by
 * function (JIT-compiled JavaScript appears as bare addresses; a run with node's --perf-basic-prof
 * writes /tmp/perf-<pid>.map, which names them).
 */
import { execFile, spawn } from "node:child_process"
import { copyFile, mkdir, readdir, readFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { startBenchDatabase } from "./benchDatabase.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { load } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, gatewayEnvironment, root, sleep } from "./processes.ts"

const run = promisify(execFile)
const other = process.argv[2]
if (other === undefined || other.startsWith("--"))
  throw new Error("usage: npm run bench:instructions -- <path of another checkout> [--smoke]")
const smoke = process.argv.includes("--smoke")
/** Settings given with `--env NAME=VALUE` (repeatable), for both checkouts' gateways. */
const extraEnv = Object.fromEntries(
  process.argv.flatMap((arg, i) => (process.argv[i - 1] === "--env" ? [arg.split("=", 2) as [string, string]] : []))
)
/** A directory the callgrind dumps are copied to (`--keep DIR`); the run's own directory is removed at the end. */
const keep = process.argv[process.argv.indexOf("--keep") + 1]
const keepDir = process.argv.includes("--keep") && keep !== undefined ? resolve(keep) : undefined
/** The old generation's initial size (MB): far above what a run promotes, so no major collection starts. */
const OLD_SPACE_MB = 1024
/** `--warmup N`: more requests before counting starts (the compiler's tail weighs less; each 1,000 adds about 2 minutes per arm). */
const warmupArg = process.argv.includes("--warmup") ? Number(process.argv[process.argv.indexOf("--warmup") + 1]) : 1000
const WARMUP = smoke ? 20 : warmupArg
const REQUESTS = smoke ? 20 : 2000

const database = await startBenchDatabase("instructions")
const { dataDir } = database
const mock = await startMockUpstream()
await mock.configure({ latencyMs: 0 })

// callgrind_control finds the process by the user and host valgrind saw: both are set, the same for both.
const vgdbEnvironment = { LOGNAME: "bench", HOST: "127.0.0.1" }

/** Instructions per request of one checkout: counting is zeroed after the warm-up and dumped after the run. */
const measure = async (name: string, checkout: string) => {
  const port = await freePort()
  const out = join(dataDir, name)
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      `--callgrind-out-file=${out}.%p`,
      "--dump-instr=no",
      process.execPath,
      // No major collection during the run (see above).
      `--initial-old-space-size=${OLD_SPACE_MB}`,
      join(checkout, "src/main.ts")
    ],
    {
      env: {
        PATH: process.env["PATH"] ?? "",
        ...gatewayEnvironment(await database.createDatabase(name), mock.url),
        PORT: String(port),
        EMBEDDINGS: "off",
        ...extraEnv,
        ...vgdbEnvironment
      },
      stdio: ["ignore", "ignore", "pipe"]
    }
  )
  let stderr = ""
  child.stderr!.on("data", (part: Buffer) => (stderr = (stderr + part.toString()).slice(-4000)))
  const base = `http://127.0.0.1:${port}`
  // Under valgrind the start takes a minute or two.
  for (
    let attempt = 0;
    !(await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false
    ));
    attempt++
  ) {
    if (attempt > 1200 || child.exitCode !== null) throw new Error(`${name} did not start: ${stderr}`)
    await sleep(250)
  }
  await seedBenchProfile(base)
  const options = { url: `${base}/v1`, body: chatBody(false), concurrency: 1, headers: { "x-service-id": BENCH_USER } }
  await load({ ...options, requests: WARMUP })
  const control = (command: string) =>
    run("callgrind_control", [command, String(child.pid)], { env: { ...process.env, ...vgdbEnvironment } })
  await control("-z")
  const measured = await load({ ...options, requests: REQUESTS })
  await control("-d")
  child.kill("SIGTERM")
  await new Promise((done) => child.once("exit", done))
  if (measured.samples.some((sample) => !sample.ok)) throw new Error(`${name}: a request failed`)
  const dump = (await readdir(dataDir)).find((file) => file.startsWith(`${name}.`) && file.endsWith(".1"))
  const text = await readFile(join(dataDir, dump ?? "missing"), "utf8")
  if (keepDir !== undefined && dump !== undefined) {
    await mkdir(keepDir, { recursive: true })
    await copyFile(join(dataDir, dump), join(keepDir, `${name}.callgrind`))
  }
  const total = Number((/^summary:\s+(\d+)/m.exec(text) ?? /^totals:\s+(\d+)/m.exec(text))?.[1])
  return total / REQUESTS
}

// The other checkout twice, around this one: the two agree within the noise, or the run says so.
const first = await measure("other_a", resolve(other))
const mine = await measure("this", root)
const second = await measure("other_b", resolve(other))
await mock.close()
await database.close()

const theirs = (first + second) / 2
const millions = (n: number) => (n / 1e6).toFixed(3)
process.stdout.write(
  [
    `Instructions per chat completion with injection (callgrind, every thread, ${REQUESTS} sequential requests after ${WARMUP}, EMBEDDINGS=off):`,
    "",
    "| Checkout | Instructions / request (millions) |",
    "|---|---|",
    `| other (${other}), before | ${millions(first)} |`,
    `| this (${commit}) | ${millions(mine)} |`,
    `| other (${other}), after | ${millions(second)} |`,
    "",
    `this / other: ×${(mine / theirs).toFixed(3)} (the other checkout's two runs differ by ${((100 * Math.abs(first - second)) / theirs).toFixed(2)}%)`,
    ""
  ].join("\n")
)
