import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chunkFrames, completion, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const SERVICE_KEY = "sk-service-metrics"
const auth = { authorization: `Bearer ${SERVICE_KEY}` }

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-test-default-upstream",
    SERVICE_API_KEY: SERVICE_KEY
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})

/** Every sample of the exposition: `name{labels}` → value. */
const scrape = async () => {
  const response = await gw.request<string>("GET", "/metrics", { headers: auth })
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4")
  const samples = new Map<string, number>()
  for (const line of response.text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const at = line.lastIndexOf(" ")
    samples.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return { text: response.text, samples }
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const SAMPLE = /^([^\s{]+)(?:\{(.*)\})? (\S+)$/
const LABEL = /([^=,]+)="((?:[^"\\]|\\.)*)"/g
/** Unit spellings promtool's linter rejects, with the base unit it asks for. */
const NON_BASE_UNITS =
  /_(milliseconds|microseconds|nanoseconds|minutes|hours|days|ms|us|ns|sec|secs|mins|kilobytes|megabytes|kb|mb|percent)(_|$)/

/**
 * What `promtool check metrics` reports that this exposition could get wrong: families without
 * HELP or TYPE, counters without `_total` (and others with it), `le` outside histograms,
 * `quantile` outside summaries, names that are not snake_case or not in base units, malformed
 * samples, repeated series; and families split in two, which OpenMetrics parsers reject.
 */
const promtoolProblems = (text: string): Array<string> => {
  const problems: Array<string> = []
  const help = new Set<string>()
  const types = new Map<string, string>()
  const finished = new Set<string>()
  const series = new Set<string>()
  let current: string | undefined
  const enter = (family: string) => {
    if (family === current) return
    if (current !== undefined) finished.add(current)
    if (finished.has(family)) problems.push(`${family}: its lines are split`)
    current = family
  }
  for (const line of text.split("\n")) {
    if (line === "") continue
    const comment = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line)
    if (comment !== null) {
      const [, kind, name, rest] = comment as unknown as [string, string, string, string | undefined]
      enter(name)
      if (kind === "HELP") {
        if ((rest ?? "").trim() === "") problems.push(`${name}: empty HELP`)
        help.add(name)
      } else {
        if (types.has(name)) problems.push(`${name}: second TYPE`)
        types.set(name, rest ?? "")
      }
      continue
    }
    if (line.startsWith("#")) continue
    const sample = SAMPLE.exec(line)
    if (sample === null) {
      problems.push(`malformed sample: ${line}`)
      continue
    }
    const [, name, labelText = "", value] = sample as unknown as [string, string, string | undefined, string]
    const suffix = /_(bucket|sum|count)$/.exec(name)
    const base =
      suffix !== null && ["histogram", "summary"].includes(types.get(name.slice(0, -suffix[0].length)) ?? "")
        ? name.slice(0, -suffix[0].length)
        : name
    const type = types.get(base)
    enter(base)
    if (!METRIC_NAME.test(name)) problems.push(`${name}: invalid name`)
    if (type === undefined) problems.push(`${name}: sample before (or without) its TYPE`)
    if (!help.has(base)) problems.push(`${base}: no HELP`)
    if (!/^[a-z0-9_]+$/.test(base)) problems.push(`${base}: not snake_case`)
    if (NON_BASE_UNITS.test(base)) problems.push(`${base}: not in base units`)
    if (type === "counter" && !base.endsWith("_total")) problems.push(`${base}: counter without _total`)
    if (type !== "counter" && base.endsWith("_total")) problems.push(`${base}: _total on a ${type}`)
    if (Number.isNaN(Number(value)) && !["NaN", "+Inf", "-Inf"].includes(value))
      problems.push(`${name}: value ${value}`)
    const labels = [...labelText.matchAll(LABEL)].map((match) => match[1]!.trim())
    if (labelText !== "" && labels.length === 0) problems.push(`${name}: unreadable labels {${labelText}}`)
    for (const label of labels) {
      if (!LABEL_NAME.test(label) || label.startsWith("__")) problems.push(`${name}: invalid label ${label}`)
    }
    if (labels.includes("le") && !(type === "histogram" && name.endsWith("_bucket")))
      problems.push(`${name}: le outside a histogram`)
    if (labels.includes("quantile") && type !== "summary") problems.push(`${name}: quantile outside a summary`)
    if (new Set(labels).size !== labels.length) problems.push(`${name}: a label twice`)
    const key = `${name}{${labelText}}`
    if (series.has(key)) problems.push(`${key}: twice`)
    series.add(key)
  }
  for (const family of types.keys()) if (!help.has(family)) problems.push(`${family}: no HELP`)
  return [...new Set(problems)]
}

const client = new OpenAI({
  baseURL: "",
  apiKey: SERVICE_KEY,
  maxRetries: 0,
  defaultHeaders: { "X-Service-Id": "metrics-user" }
})

describe("counters an alert can be written on", () => {
  it("are all there at 0 before their first event, with every label value", async () => {
    // A gateway that has served nothing yet.
    const fresh = await startGateway({ SERVICE_API_KEY: SERVICE_KEY })
    try {
      const response = await fresh.request<string>("GET", "/metrics", { headers: auth })
      for (const sample of [
        "gateway_requests_without_memory_total",
        "gateway_extraction_jobs_deferred_total",
        ...["buffer_full", "refused", "profile_erased", "shutdown"].map(
          (reason) => `gateway_turns_lost_total{reason="${reason}"}`
        ),
        ...["user", "key", "client", "auth"].map((scope) => `gateway_rate_limited_total{scope="${scope}"}`),
        ...["missing_api_key", "invalid_api_key", "insufficient_scope"].map(
          (code) => `gateway_auth_rejections_total{code="${code}"}`
        ),
        'gateway_background_jobs_total{line="webhook",outcome="failed"}',
        'gateway_context_cache_lookups_total{result="miss"}',
        'gateway_memory_retrievals_total{mode="fused",semantic="timeout"}',
        ...["memories", "turns", "responses"].map((kind) => `gateway_retention_removed_total{kind="${kind}"}`),
        // Histograms too, empty, for each label value known up front; and the turns waiting.
        "gateway_overhead_seconds_count",
        "gateway_stream_first_chunk_seconds_count",
        "gateway_embedding_query_seconds_count",
        'gateway_stage_seconds_bucket{stage="pipeline.inject",le="0.005"}',
        'gateway_stage_seconds_count{stage="Upstream.chat"}',
        'gateway_upstream_response_seconds_count{provider="anthropic"}',
        "gateway_turns_waiting"
      ])
        expect(response.text.split("\n")).toContain(`${sample} 0`)
      // A garbage collection may come before the scrape: its kinds are there, at whatever count.
      for (const kind of ["minor", "major", "incremental", "weakcb"])
        expect(response.text).toMatch(new RegExp(`^nodejs_gc_duration_seconds_count\\{kind="${kind}"\\} \\d+$`, "m"))
      // The process's own health, under the names Node.js dashboards use.
      const value = (name: string) => Number(response.text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1])
      for (const name of [
        "process_resident_memory_bytes",
        "nodejs_heap_size_used_bytes",
        "nodejs_heap_size_total_bytes"
      ])
        expect(value(name)).toBeGreaterThan(1_000_000)
      expect(value("process_cpu_user_seconds_total")).toBeGreaterThan(0)
      expect(value("process_start_time_seconds")).toBeGreaterThan(1_700_000_000)
    } finally {
      await fresh.close()
    }
  })
})

describe("the process's CPU time", () => {
  it("counts from the process's start, not from the gateway's", async () => {
    // The gateway runs in this process: the CPU spent here before it starts is the process's too.
    const burnUntil = performance.now() + 300
    while (performance.now() < burnUntil) {
      /* busy */
    }
    const before = process.cpuUsage()
    const fresh = await startGateway({ SERVICE_API_KEY: SERVICE_KEY })
    try {
      const response = await fresh.request<string>("GET", "/metrics", { headers: auth })
      const seconds = (name: string) => Number(response.text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1])
      expect(seconds("process_cpu_user_seconds_total")).toBeGreaterThanOrEqual(before.user / 1e6)
      expect(seconds("process_cpu_system_seconds_total")).toBeGreaterThanOrEqual(before.system / 1e6)
    } finally {
      await fresh.close()
    }
  })
})

describe("GET /metrics", () => {
  it("needs the service key like the management API", async () => {
    const response = await gw.request("GET", "/metrics")
    expect(response.status).toBe(401)
  })

  it("counts requests by route template, times the upstream and the first chunk, and reports the queue and cache", async () => {
    const openai = client.withOptions({ baseURL: `${gw.baseUrl}/v1` })
    await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hello" }] })
    up.enqueue({ kind: "sse", frames: chunkFrames(["a", "b"]), intervalMs: 5 })
    const stream = await openai.chat.completions.create({
      model: "gpt-test",
      stream: true,
      messages: [{ role: "user", content: "again" }]
    })
    for await (const _ of stream) {
      /* drained */
    }
    const created = await gw.request<{ profile: { id: string } }>("POST", "/api/profiles", {
      json: { externalId: "metrics-other" },
      headers: auth
    })
    await gw.request("GET", `/api/profiles/${created.body.profile.id}`, { headers: auth })
    await gw.request("GET", "/api/profiles/00000000-0000-4000-8000-000000000000", { headers: auth })
    await gw.request("GET", "/no/such/path/7f3a", { headers: auth })
    // Both turns, with their jobs, were written before their answers ended.
    await eventually(async () => {
      const [row] = await gw.query<{ count: number }>("SELECT count(*)::int AS count FROM extraction_jobs")
      return row!.count === 2 ? true : undefined
    })

    // The gateway runs in this process: hold its event loop for 60 ms, then wait for the scrape that
    // reports it (each scrape starts the delay's histogram anew).
    const blockedUntil = performance.now() + 60
    while (performance.now() < blockedUntil) {
      /* busy */
    }
    const { text, samples } = await eventually(async () => {
      const scraped = await scrape()
      return (scraped.samples.get(`gateway_event_loop_delay_max_seconds`) ?? 0) >= 0.04 ? scraped : undefined
    })
    const chat = `route="/v1/chat/completions",method="POST",status="200"`
    expect(samples.get(`gateway_http_requests_total{${chat}}`)).toBe(2)
    expect(samples.get(`gateway_http_request_duration_seconds_count{${chat}}`)).toBe(2)
    expect(samples.get(`gateway_http_requests_total{route="/api/profiles/:id",method="GET",status="200"}`)).toBe(1)
    expect(samples.get(`gateway_http_requests_total{route="/api/profiles/:id",method="GET",status="404"}`)).toBe(1)
    expect(samples.get(`gateway_http_requests_total{route="unmatched",method="GET",status="404"}`)).toBe(1)
    // The scrape refused for its missing key never reached the router: it has no route either.
    expect(samples.get(`gateway_http_requests_total{route="unmatched",method="GET",status="401"}`)).toBe(1)
    // Ids and unknown paths never become labels.
    expect(text).not.toContain(created.body.profile.id)
    expect(text).not.toContain("7f3a")

    expect(samples.get(`gateway_upstream_response_seconds_count{provider="openai"}`)).toBe(2)
    expect(samples.get(`gateway_overhead_seconds_count`)).toBe(2)
    expect(samples.get(`gateway_stream_first_chunk_seconds_count`)).toBe(1)
    // Every stage of both requests is timed, the streamed one's record (after its head was sent) too.
    for (const stage of ["resolveUser", "loadProfile", "inject", "forward", "record"]) {
      expect(samples.get(`gateway_stage_seconds_count{stage="pipeline.${stage}"}`)).toBe(2)
    }
    expect(samples.get(`gateway_stage_seconds_count{stage="Upstream.chat"}`)).toBe(2)
    // The first request loads the profile, the second finds it cached.
    expect(samples.get(`gateway_context_cache_lookups_total{result="miss"}`)).toBe(1)
    expect(samples.get(`gateway_context_cache_lookups_total{result="hit"}`)).toBe(1)
    expect(samples.get(`gateway_context_cache_entries`)).toBe(1)
    // No worker runs in this test: both recorded turns wait in the queue.
    expect(samples.get(`gateway_extraction_jobs{status="pending"}`)).toBe(2)
    expect(samples.get(`gateway_extraction_jobs{status="running"}`)).toBe(0)
    expect(samples.get(`gateway_extraction_lag_seconds`)).toBeGreaterThan(0)
    expect(samples.get(`gateway_event_loop_delay_max_seconds`)).toBeGreaterThanOrEqual(0.04)
    // The one long block shows in the maximum, not in the median.
    expect(samples.get(`gateway_event_loop_delay_p50_seconds`)).toBeLessThan(
      samples.get(`gateway_event_loop_delay_max_seconds`)!
    )
    expect(samples.get(`gateway_event_loop_delay_p99_seconds`)).toBeLessThanOrEqual(
      samples.get(`gateway_event_loop_delay_max_seconds`)!
    )
    expect(samples.get(`gateway_event_loop_utilization`)).toBeGreaterThan(0)
    expect(samples.get(`gateway_event_loop_utilization`)).toBeLessThanOrEqual(1)
    // The scrape in progress is the only request in flight.
    expect(samples.get(`gateway_http_requests_in_flight`)).toBe(1)
  })

  it("passes the checks of promtool check metrics", async () => {
    const openai = client.withOptions({ baseURL: `${gw.baseUrl}/v1` })
    await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "checked" }] })
    await gw.request("GET", "/no/such/path", { headers: auth })
    const { text } = await scrape()
    // Histograms, counters and gauges, with and without labels, are all in the exposition.
    expect(text).toContain("# TYPE gateway_http_request_duration_seconds histogram")
    expect(text).toContain("# TYPE gateway_http_requests_total counter")
    expect(text).toContain("# TYPE gateway_event_loop_delay_p99_seconds gauge")
    expect(promtoolProblems(text)).toEqual([])
  })

  it("the checks catch what promtool rejects", () => {
    expect(
      promtoolProblems(
        [
          "# HELP loop_delay_seconds Delay",
          "# TYPE loop_delay_seconds gauge",
          `loop_delay_seconds{quantile="0.5"} 0.1`,
          "# TYPE jobs counter",
          "jobs 1",
          "# HELP stray Stray",
          "# TYPE stray gauge",
          "stray 1",
          "loop_delay_seconds 0.2",
          "# HELP took_ms Took",
          "# TYPE took_ms gauge",
          "took_ms 3"
        ].join("\n")
      )
    ).toEqual([
      "loop_delay_seconds: quantile outside a summary",
      "jobs: no HELP",
      "jobs: counter without _total",
      "loop_delay_seconds: its lines are split",
      "took_ms: not in base units"
    ])
  })
})

describe("token usage in /metrics", () => {
  /** The value of the sample of `name` whose labels are exactly `labels`, in any order. */
  const sampleOf = (samples: ReadonlyMap<string, number>, name: string, labels: Record<string, string>) => {
    const wanted = Object.entries(labels)
      .map(([label, value]) => `${label}="${value}"`)
      .sort()
      .join(",")
    for (const [series, value] of samples) {
      const match = SAMPLE.exec(`${series} ${value}`)
      if (match?.[1] !== name) continue
      const found = [...(match[2] ?? "").matchAll(LABEL)].map(([pair]) => pair.trim()).sort()
      if (found.join(",") === wanted) return value
    }
    return undefined
  }

  it("counts the provider's tokens by namespace, model, work and kind once the usage is written", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: {
        ...completion({ model: "gpt-usage-metrics" }),
        usage: {
          prompt_tokens: 120,
          completion_tokens: 30,
          total_tokens: 150,
          prompt_tokens_details: { cached_tokens: 64 },
          completion_tokens_details: { reasoning_tokens: 10 }
        }
      }
    })
    const openai = client.withOptions({ baseURL: `${gw.baseUrl}/v1` })
    await openai.chat.completions.create({
      model: "gpt-usage-metrics",
      messages: [{ role: "user", content: "count me" }]
    })
    const app = { namespace: "default", model: "gpt-usage-metrics", work: "app" }
    // Usage is written in batches after the answers; the counters move when it is written.
    const { samples } = await eventually(async () => {
      const scraped = await scrape()
      return sampleOf(scraped.samples, "gateway_usage_requests_total", app) === 1 ? scraped : undefined
    })
    const tokens = (token: string) => sampleOf(samples, "gateway_usage_tokens_total", { ...app, token })
    expect(tokens("input")).toBe(120)
    expect(tokens("cached_input")).toBe(64)
    expect(tokens("output")).toBe(30)
    expect(tokens("reasoning")).toBe(10)
    // A kind the provider reported none of has no series.
    expect(tokens("cache_write")).toBeUndefined()
  })
})
