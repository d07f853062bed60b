/**
 * Where a request's time goes, stage by stage, as the gateway itself times them (the same timings as
 * its `x-gateway-overhead` header and its debug log's "completion stages" line): sequential requests
 * with the main benchmark's profile and message on a 0 ms mock, non-streamed and streamed, the
 * gateway's median per stage. With another checkout, both gateways are alive and measured in
 * alternating rounds, side by side (the drift of a shared machine falls on both).
 *
 *   npm run bench:stages                              # this checkout alone (about a minute)
 *   npm run bench:stages -- /tmp/previous             # this checkout against another one
 *   npm run bench:stages -- /tmp/previous --env CONTEXT_CACHE_FENCE_MS=0   # a setting for both
 *
 * "before the provider" is the overhead of a streamed request (its header's figure: everything but the
 * provider call, the first byte's wait); "rest of the request" is that overhead less the named stages
 * (reading the body, parse, routing, the answer's headers).
 */
import { resolve } from "node:path"
import { startBenchDatabase } from "./benchDatabase.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { load, median } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, gatewayEnvironment, root, startProcess, stop } from "./processes.ts"

const other = process.argv[2] !== undefined && !process.argv[2].startsWith("--") ? resolve(process.argv[2]) : undefined
const smoke = process.argv.includes("--smoke")
const extraEnv = Object.fromEntries(
  process.argv.flatMap((arg, i) => (process.argv[i - 1] === "--env" ? [arg.split("=", 2) as [string, string]] : []))
)
const WARMUP = smoke ? 50 : 1000
const ROUNDS = smoke ? 2 : 6
const PER_ROUND = smoke ? 50 : 300

const database = await startBenchDatabase("stages")
const mock = await startMockUpstream()
await mock.configure({ latencyMs: 0 })

/** A gateway that logs each request's stage timings; `take` returns those logged since the last call. */
const startGateway = async (name: string, checkout: string) => {
  const port = await freePort()
  let pending = ""
  let lines: Array<Record<string, number>> = []
  const child = await startProcess(
    `${checkout}/src/main.ts`,
    {
      ...gatewayEnvironment(await database.createDatabase(name), mock.url),
      PORT: String(port),
      LOG_LEVEL: "debug",
      LOG_FORMAT: "json",
      ...extraEnv
    },
    `http://127.0.0.1:${port}/health`,
    (text) => {
      const parts = (pending + text).split("\n")
      pending = parts.pop() ?? ""
      for (const line of parts) {
        if (!line.includes('"completion stages"')) continue
        lines.push((JSON.parse(line) as { annotations: Record<string, number> }).annotations)
      }
    }
  )
  const base = `http://127.0.0.1:${port}`
  await seedBenchProfile(base)
  const run = (stream: boolean, requests: number) =>
    load({
      url: `${base}/v1`,
      body: chatBody(stream),
      concurrency: 1,
      requests,
      headers: { "x-service-id": BENCH_USER }
    })
  await run(false, WARMUP)
  await run(true, WARMUP / 10)
  const take = () => {
    const taken = lines
    lines = []
    return taken
  }
  take()
  return { name, child, run, take }
}

const gateways = [
  await startGateway("this", root),
  ...(other === undefined ? [] : [await startGateway("other", other)])
]
const timings: Record<string, { plain: Array<Record<string, number>>; streamed: Array<Record<string, number>> }> = {}
/** What the client saw: each request's time (non-streamed) and time to the first byte (streamed), by arm. */
const seen: Record<string, { plain: Array<number>; streamed: Array<number> }> = { direct: { plain: [], streamed: [] } }
for (const gateway of gateways) {
  timings[gateway.name] = { plain: [], streamed: [] }
  seen[gateway.name] = { plain: [], streamed: [] }
}
const direct = (stream: boolean) =>
  load({ url: `${mock.url}/v1`, body: chatBody(stream), concurrency: 1, requests: PER_ROUND })
for (let round = 0; round < ROUNDS; round++) {
  seen["direct"]!.plain.push(...(await direct(false)).samples.map((sample) => sample.ms))
  seen["direct"]!.streamed.push(...(await direct(true)).samples.map((sample) => sample.ttftMs))
  for (const gateway of round % 2 === 0 ? gateways : [...gateways].reverse()) {
    seen[gateway.name]!.plain.push(...(await gateway.run(false, PER_ROUND)).samples.map((sample) => sample.ms))
    timings[gateway.name]!.plain.push(...gateway.take())
    seen[gateway.name]!.streamed.push(...(await gateway.run(true, PER_ROUND)).samples.map((sample) => sample.ttftMs))
    timings[gateway.name]!.streamed.push(...gateway.take())
  }
}
await Promise.all(gateways.map((gateway) => stop(gateway.child)))
await mock.close()
await database.close()

const medianOf = (entries: ReadonlyArray<Record<string, number>>, pick: (entry: Record<string, number>) => number) =>
  median(entries.map(pick))
const stage = (entry: Record<string, number>, name: string) => entry[name] ?? 0
/** The forward stage without the provider call it waits for. */
const forwarding = (e: Record<string, number>) => stage(e, "pipeline.forward") - stage(e, "Upstream.chat")
const named = (e: Record<string, number>) =>
  stage(e, "pipeline.resolveUser") + stage(e, "pipeline.loadProfile") + stage(e, "pipeline.inject") + forwarding(e)
const rows: Array<[string, (entry: Record<string, number>) => number, "plain" | "streamed"]> = [
  ["resolveUser (plugins, user id, rate limit)", (e) => stage(e, "pipeline.resolveUser"), "streamed"],
  ["loadProfile (cache or database)", (e) => stage(e, "pipeline.loadProfile"), "streamed"],
  ["inject (ranking, context block)", (e) => stage(e, "pipeline.inject"), "streamed"],
  ["forward, less the provider's first byte", forwarding, "streamed"],
  ["rest of the request (body, parse, routing, headers)", (e) => stage(e, "overheadMs") - named(e), "streamed"],
  ["**before the provider, streamed (overhead)**", (e) => stage(e, "overheadMs"), "streamed"],
  ["record (the turn's commit; non-streamed)", (e) => stage(e, "pipeline.record"), "plain"],
  ["**overhead, non-streamed (incl. record)**", (e) => stage(e, "overheadMs"), "plain"]
]
const fmt = (ms: number) => ms.toFixed(3)
const names = gateways.map((gateway) => gateway.name)
/** Added time as the client sees it, and the part of it the gateway's own timings do not cover. */
const added = (name: string, kind: "plain" | "streamed") => median(seen[name]![kind]) - median(seen["direct"]![kind])
const outside = (name: string, kind: "plain" | "streamed") =>
  added(name, kind) - medianOf(timings[name]![kind], (e) => stage(e, "overheadMs"))
/** How much longer the provider call takes from the gateway than from the client directly. */
const hop = (name: string, kind: "plain" | "streamed") =>
  medianOf(timings[name]![kind], (e) => stage(e, "Upstream.chat")) - median(seen["direct"]![kind])
const clientRows: Array<[string, (name: string) => number]> = [
  [
    "**added time to first byte, streamed, as the client sees it (gateway − direct)**",
    (name) => added(name, "streamed")
  ],
  ["… of which outside the stages (HTTP in and out, the provider call's own hop)", (name) => outside(name, "streamed")],
  ["… … the provider call's own hop (its first byte from the gateway − direct)", (name) => hop(name, "streamed")],
  ["**added time, non-streamed, as the client sees it**", (name) => added(name, "plain")],
  ["… of which outside the stages", (name) => outside(name, "plain")],
  ["… … the provider call's own hop", (name) => hop(name, "plain")]
]
const table = [
  `Stage timings (\`npm run bench:stages\`), this = ${commit}${other === undefined ? "" : `, other = ${other}`}: medians in ms over ${ROUNDS} rounds × ${PER_ROUND} sequential requests each way, after ${WARMUP}; 0 ms mock${
    Object.keys(extraEnv).length > 0
      ? `; ${Object.entries(extraEnv)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ")}`
      : ""
  }`,
  "",
  `| Stage | ${names.join(" | ")}${other === undefined ? "" : " | this − other"} |`,
  `|---|${names.map(() => "---|").join("")}${other === undefined ? "" : "---|"}`,
  ...rows.map(([label, pick, kind]) => {
    const values = names.map((name) => medianOf(timings[name]![kind], pick))
    return `| ${label} | ${values.map(fmt).join(" | ")}${other === undefined ? "" : ` | ${fmt(values[0]! - values[1]!)}`} |`
  }),
  ...clientRows.map(([label, of]) => {
    const values = names.map(of)
    return `| ${label} | ${values.map(fmt).join(" | ")}${other === undefined ? "" : ` | ${fmt(values[0]! - values[1]!)}`} |`
  }),
  ""
].join("\n")
process.stdout.write(`\n${table}`)
