/**
 * The request path of this checkout against another one (e.g. the previous release), measured
 * side by side: each arm is a gateway on its own database with the main benchmark's profile (a
 * summary, five traits, fifty memories) and the same message every time, in alternating rounds
 * (the first discarded as warm-up): CPU per request and p50 over 1000 sequential requests, then
 * throughput at 64 connections for 3 s. Arms: the other checkout, this one with EMBEDDINGS=off,
 * and this one with its defaults.
 *
 *   git worktree add /tmp/previous <ref> && ln -s "$PWD/node_modules" /tmp/previous/node_modules
 *   npm run bench:compare -- /tmp/previous
 */
import { chmod, mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { EmbeddedPostgres } from "../src/store/EmbeddedPostgres.ts"
import { load, median } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { commit, cpuMs, freePort, gatewayEnvironment, root, startProcess, stop } from "./processes.ts"

const other = process.argv[2]
if (other === undefined) throw new Error("usage: npm run bench:compare -- <path of another checkout>")
const ROUNDS = 9

const scope = Effect.runSync(Scope.make())
const dataDir = await mkdtemp(join(tmpdir(), "gateway-compare-"))
await chmod(dataDir, 0o755)
const pg = await Effect.runPromise(Layer.buildWithScope(EmbeddedPostgres.layer(dataDir), scope))
const adminUrl = Redacted.value(Context.get(pg, EmbeddedPostgres).url)
const databaseOf = async (name: string) => {
  await Effect.runPromise(
    Effect.gen(function*() {
      yield* (yield* PgClient.PgClient).unsafe(`CREATE DATABASE ${name}`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl) })))
  )
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
const mock = await startMockUpstream()
await mock.configure({ latencyMs: 0 })

const start = async (name: string, checkout: string, env: Record<string, string>) => {
  const port = await freePort()
  const child = await startProcess(join(checkout, "src/main.ts"), {
    ...gatewayEnvironment(await databaseOf(name), mock.url),
    PORT: String(port),
    ...env
  }, `http://127.0.0.1:${port}/health`)
  const base = `http://127.0.0.1:${port}`
  await seedBenchProfile(base)
  return { name, child, base }
}

const arms = [
  await start("other", resolve(other), {}),
  await start("off", root, { EMBEDDINGS: "off" }),
  await start("defaults", root, {})
]
const body = chatBody(false)
const results = new Map(arms.map((arm) => [arm.name, [] as Array<{ p50: number; cpu: number; rps: number }>]))
for (let round = 0; round < ROUNDS; round++) {
  // A different arm goes first each round.
  for (const arm of [...arms.slice(round % arms.length), ...arms.slice(0, round % arms.length)]) {
    const headers = { "x-service-id": BENCH_USER }
    const before = await cpuMs(arm.child.pid!)
    const one = await load({ url: `${arm.base}/v1`, body, concurrency: 1, requests: 1000, headers })
    const after = await cpuMs(arm.child.pid!)
    const many = await load({ url: `${arm.base}/v1`, body, concurrency: 64, durationMs: 3000, headers })
    if (round > 0) {
      results.get(arm.name)!.push({
        p50: median(one.samples.map((s) => s.ms)),
        cpu: (after - before) / 1000,
        rps: many.samples.filter((s) => s.ok).length / (many.elapsedMs / 1000)
      })
    }
  }
}
for (const arm of arms) await stop(arm.child)
await mock.close()
await Effect.runPromise(Scope.close(scope, Exit.void))
await rm(dataDir, { recursive: true, force: true })

const fmt = (n: number, digits: number) => n.toFixed(digits)
process.stdout.write([
  `Compared ${commit} with ${other}, ${ROUNDS - 1} rounds (medians):`,
  "",
  "| Arm | p50 (ms) | CPU ms / request | Throughput c=64 (req/s) | CPU vs other (per round) | Throughput vs other (per round) |",
  "|---|---|---|---|---|---|",
  ...arms.map(({ name }) => {
    const rounds = results.get(name)!
    const of = (key: "p50" | "cpu" | "rps") => median(rounds.map((r) => r[key]))
    // Each round's ratio to the other checkout in the same round: drift between rounds cancels out.
    const ratio = (key: "cpu" | "rps") => median(rounds.map((r, index) => r[key] / results.get("other")![index]![key]))
    return `| ${name} | ${fmt(of("p50"), 3)} | ${fmt(of("cpu"), 3)} | ${fmt(of("rps"), 0)} | ${fmt(ratio("cpu"), 3)} | ${fmt(ratio("rps"), 3)} |`
  }),
  ""
].join("\n"))
