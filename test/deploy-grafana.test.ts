/**
 * deploy/grafana/profile-memory-gateway.json against a real gateway's /metrics: every metric a panel's
 * query names exists in the scrape (histograms by their `_bucket`/`_sum`/`_count` series), with the
 * labels the query filters and groups on, and the label values it asks for. The gateway runs in this
 * process on the test's PostgreSQL: once before any traffic (a new deployment's dashboard has data,
 * histograms and gauges included, from the start), and with traffic enough that the families whose
 * labels come with the traffic (the usage counters' models) have samples too.
 */
import { readFileSync } from "node:fs"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chunkFrames, completion, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const ROOT = resolve(import.meta.dirname, "..")
const DASHBOARD_FILE = join(ROOT, "deploy/grafana/profile-memory-gateway.json")
const ADMIN_KEY = "sk-admin-grafana"
const SERVICE_KEY = "sk-service-grafana"

/** Labels Prometheus adds to every series it scrapes. */
const TARGET_LABELS = new Set(["job", "instance"])
const KEYWORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "bool",
  "and",
  "or",
  "unless"
])
const KEYWORDS_CI = new Set(["offset", "inf", "nan"])

/** Each series name of the exposition, with its labels and their values. */
type Scrape = Map<string, Map<string, Set<string>>>

const parseScrape = (text: string): Scrape => {
  const scrape: Scrape = new Map()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line)
    if (match === null) throw new Error(`not a sample: ${line}`)
    const labels = scrape.get(match[1]!) ?? new Map<string, Set<string>>()
    scrape.set(match[1]!, labels)
    for (const [, name, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      const values = labels.get(name!) ?? new Set<string>()
      values.add(value!)
      labels.set(name!, values)
    }
  }
  return scrape
}

interface Matcher {
  readonly name: string
  readonly op: string
  readonly value: string
}
interface Selector {
  readonly metric: string
  readonly matchers: ReadonlyArray<Matcher>
}

/**
 * The metric selectors of a PromQL expression (Grafana's `$variables` included), and the labels its
 * `by`/`without`/`on`/`ignoring`/`group_*` clauses name. Function names, keywords, numbers, ranges and
 * strings are not metrics.
 */
const parsePromQl = (expr: string) => {
  const selectors: Array<Selector> = []
  const grouping: Array<string> = []
  let rest = expr.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, _keyword, labels) => {
    grouping.push(
      ...String(labels)
        .split(",")
        .map((label) => label.trim())
        .filter((label) => label !== "")
    )
    return " "
  })
  rest = rest.replace(/\[[^\]]*\]/g, " ")
  rest = rest.replace(/([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g, (_, metric: string | undefined, body: string) => {
    if (metric === undefined) throw new Error(`a selector without a metric name: {${body}}`)
    const matchers = [...body.matchAll(/\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?/g)].map(
      ([, name, op, value]) => ({ name: name!, op: op!, value: value! })
    )
    selectors.push({ metric, matchers })
    return " "
  })
  rest = rest.replace(/"(?:[^"\\]|\\.)*"/g, " ")
  for (const [, word, call] of rest.matchAll(/(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (call !== undefined || KEYWORDS.has(word!) || KEYWORDS_CI.has(word!.toLowerCase())) continue
    selectors.push({ metric: word!, matchers: [] })
  }
  return { selectors, grouping }
}

interface Query {
  readonly where: string
  readonly expr: string
  readonly legend?: string
}

interface Dashboard {
  readonly __inputs?: ReadonlyArray<{ name: string; type: string; pluginId: string }>
  readonly title: string
  readonly uid: string
  readonly panels: ReadonlyArray<Panel>
  readonly templating?: { list: ReadonlyArray<{ name: string; type: string; datasource?: unknown; query?: unknown }> }
}
interface Panel {
  readonly id: number
  readonly type: string
  readonly title: string
  readonly datasource?: { type: string; uid: string }
  readonly gridPos: { h: number; w: number; x: number; y: number }
  readonly targets?: ReadonlyArray<{ expr: string; legendFormat?: string; datasource?: { type: string; uid: string } }>
  readonly panels?: ReadonlyArray<Panel>
}

const allPanels = (panels: ReadonlyArray<Panel>): Array<Panel> =>
  panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])])

/** Every PromQL query of the dashboard: the panels' targets and the template variables' label_values. */
const queriesOf = (dashboard: Dashboard): Array<Query> => [
  ...allPanels(dashboard.panels).flatMap((panel) =>
    (panel.targets ?? []).map((target, i) => ({
      where: `panel "${panel.title}" query ${i + 1}`,
      expr: target.expr,
      ...(target.legendFormat === undefined ? {} : { legend: target.legendFormat })
    }))
  ),
  ...(dashboard.templating?.list ?? []).flatMap((variable) => {
    if (variable.type !== "query") return []
    const text = typeof variable.query === "string" ? variable.query : (variable.query as { query: string }).query
    const labelValues = /^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/.exec(text)
    if (labelValues === null)
      throw new Error(`variable ${variable.name}: only label_values(selector, label) is expected`)
    // The label asked for, as a grouping label of the selector.
    return [{ where: `variable ${variable.name}`, expr: `sum by (${labelValues[2]}) (${labelValues[1]})` }]
  })
]

/**
 * What is wrong with the dashboard's queries against this scrape (nothing: every name exists). A query
 * naming one of `notYet` that the scrape lacks is not checked.
 */
const queryProblems = (
  dashboard: Dashboard,
  scrape: Scrape,
  notYet: ReadonlySet<string> = new Set()
): Array<string> => {
  const problems: Array<string> = []
  for (const query of queriesOf(dashboard)) {
    let parsed: ReturnType<typeof parsePromQl>
    try {
      parsed = parsePromQl(query.expr)
    } catch (error) {
      problems.push(`${query.where}: ${String(error)}`)
      continue
    }
    if (parsed.selectors.some(({ metric }) => notYet.has(metric) && !scrape.has(metric))) continue
    if (parsed.selectors.length === 0) problems.push(`${query.where}: names no metric`)
    const labelsOfQuery = new Set(TARGET_LABELS)
    for (const { metric, matchers } of parsed.selectors) {
      const labels = scrape.get(metric)
      if (labels === undefined) {
        problems.push(`${query.where}: ${metric} is not in /metrics`)
        continue
      }
      for (const label of labels.keys()) labelsOfQuery.add(label)
      for (const matcher of matchers) {
        if (TARGET_LABELS.has(matcher.name)) continue
        const values = labels.get(matcher.name)
        if (values === undefined) problems.push(`${query.where}: ${metric} has no label ${matcher.name}`)
        else if (matcher.op === "=" && !matcher.value.includes("$") && !values.has(matcher.value))
          problems.push(`${query.where}: ${metric} has no ${matcher.name}="${matcher.value}"`)
      }
    }
    for (const label of parsed.grouping)
      if (!labelsOfQuery.has(label)) problems.push(`${query.where}: groups by ${label}, which its metrics lack`)
    // A legend names labels the result keeps: the grouping's, or the series' own when nothing aggregates.
    const kept = /\b(sum|min|max|avg|count|topk|bottomk|quantile|group|stddev|stdvar)\b/.test(query.expr)
      ? new Set(parsed.grouping)
      : labelsOfQuery
    for (const [, label] of (query.legend ?? "").matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g))
      if (!kept.has(label!)) problems.push(`${query.where}: the legend's {{${label}}} is not a label of the result`)
  }
  return problems
}

const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as Dashboard

describe("the Grafana dashboard's structure", () => {
  it("imports cleanly: one Prometheus input, used by every panel, query and variable", () => {
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource", pluginId: "prometheus" })
    ])
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's import placeholder, not a template
    const datasource = { type: "prometheus", uid: "${DS_PROMETHEUS}" }
    const panels = allPanels(dashboard.panels).filter((panel) => panel.type !== "row")
    expect(panels.length).toBeGreaterThan(20)
    for (const panel of panels) {
      expect(panel.datasource, panel.title).toEqual(datasource)
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0)
      for (const target of panel.targets ?? []) expect(target.datasource, panel.title).toEqual(datasource)
    }
    for (const variable of dashboard.templating?.list ?? []) expect(variable.datasource).toEqual(datasource)
    expect(dashboard.uid).toBe("profile-memory-gateway")
  })

  it("has unique panel ids, and panels within the 24 columns that do not overlap", () => {
    const panels = allPanels(dashboard.panels)
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length)
    for (const [i, a] of panels.entries()) {
      expect(a.gridPos.x + a.gridPos.w, a.title).toBeLessThanOrEqual(24)
      for (const b of panels.slice(i + 1)) {
        const overlap =
          a.gridPos.x < b.gridPos.x + b.gridPos.w &&
          b.gridPos.x < a.gridPos.x + a.gridPos.w &&
          a.gridPos.y < b.gridPos.y + b.gridPos.h &&
          b.gridPos.y < a.gridPos.y + a.gridPos.h
        expect(overlap, `${a.title} / ${b.title}`).toBe(false)
      }
    }
  })

  it("shows what an operator alerts on", () => {
    const metrics = new Set(queriesOf(dashboard).flatMap((q) => parsePromQl(q.expr).selectors.map((s) => s.metric)))
    for (const metric of [
      "gateway_http_requests_total",
      "gateway_http_request_duration_seconds_bucket",
      "gateway_overhead_seconds_bucket",
      "gateway_upstream_response_seconds_bucket",
      "gateway_upstream_input_tokens_total",
      "gateway_upstream_output_tokens_total",
      "gateway_extraction_jobs",
      "gateway_extraction_lag_seconds",
      "gateway_background_jobs_total",
      "gateway_requests_without_memory_total",
      "gateway_turns_lost_total",
      "gateway_rate_limited_total",
      "gateway_auth_rejections_total",
      "gateway_database_available",
      "gateway_usage_tokens_total",
      "gateway_usage_requests_total",
      "gateway_usage_events_lost_total",
      "process_resident_memory_bytes",
      "nodejs_heap_size_used_bytes",
      "gateway_event_loop_delay_p99_seconds",
      "nodejs_gc_duration_seconds_sum",
      "process_cpu_user_seconds_total",
      "process_cpu_system_seconds_total"
    ])
      expect(metrics, metric).toContain(metric)
  })
})

describe("the PromQL check", () => {
  it("finds metric names, labels and groupings, and nothing else", () => {
    expect(
      parsePromQl(
        'histogram_quantile(0.95, sum by (le, route) (rate(gateway_x_bucket{job=~"$job", status=~"5.."}[$__rate_interval])))'
      )
    ).toEqual({
      selectors: [
        {
          metric: "gateway_x_bucket",
          matchers: [
            { name: "job", op: "=~", value: "$job" },
            { name: "status", op: "=~", value: "5.." }
          ]
        }
      ],
      grouping: ["le", "route"]
    })
    expect(parsePromQl("min(time() - process_start_time_seconds) or vector(0)").selectors).toEqual([
      { metric: "process_start_time_seconds", matchers: [] }
    ])
  })

  it("fails a panel naming a metric, a label or a label value that does not exist", () => {
    const scrape = parseScrape(
      [
        'gateway_http_requests_total{route="/v1/chat/completions",method="POST",status="200"} 3',
        'gateway_turns_lost_total{reason="shutdown"} 0'
      ].join("\n")
    )
    const withQuery = (expr: string, legendFormat = ""): Dashboard => ({
      ...dashboard,
      templating: { list: [] },
      panels: [
        {
          id: 1,
          type: "timeseries",
          title: "t",
          gridPos: { h: 1, w: 1, x: 0, y: 0 },
          targets: [{ expr, legendFormat }]
        }
      ]
    })
    expect(
      queryProblems(withQuery("sum by (route) (rate(gateway_http_requests_total[5m]))", "{{route}}"), scrape)
    ).toEqual([])
    expect(queryProblems(withQuery("rate(gateway_http_request_total[5m])"), scrape)).toEqual([
      'panel "t" query 1: gateway_http_request_total is not in /metrics'
    ])
    expect(queryProblems(withQuery("gateway_http_requests_seconds_bucket"), scrape)).toEqual([
      'panel "t" query 1: gateway_http_requests_seconds_bucket is not in /metrics'
    ])
    expect(queryProblems(withQuery('gateway_turns_lost_total{cause="shutdown"}'), scrape)).toEqual([
      'panel "t" query 1: gateway_turns_lost_total has no label cause'
    ])
    expect(queryProblems(withQuery('gateway_turns_lost_total{reason="buffer-full"}'), scrape)).toEqual([
      'panel "t" query 1: gateway_turns_lost_total has no reason="buffer-full"'
    ])
    expect(queryProblems(withQuery("sum by (provider) (gateway_http_requests_total)"), scrape)).toEqual([
      'panel "t" query 1: groups by provider, which its metrics lack'
    ])
    expect(queryProblems(withQuery("sum(gateway_http_requests_total)", "{{route}}"), scrape)).toEqual([
      'panel "t" query 1: the legend\'s {{route}} is not a label of the result'
    ])
  })
})

/** A routes file with one routed model (its targets' series are written when it is read). */
const routesFile = async () => {
  const file = join(await mkdtemp(join(tmpdir(), "grafana-routes-")), "routes.json")
  await writeFile(
    file,
    JSON.stringify({ routes: [{ model: "smart", targets: [{ provider: "openai", model: "gpt-test" }] }] })
  )
  return file
}

describe("every query against a gateway that has served nothing yet", () => {
  let gw: TestGateway
  let up: FakeUpstream
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test-grafana-upstream",
      ADMIN_API_KEY: ADMIN_KEY,
      EMBEDDINGS: "provider",
      ROUTES_FILE: await routesFile()
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const scrape = async () => {
    const response = await gw.request<string>("GET", "/metrics", { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    expect(response.status).toBe(200)
    return parseScrape(response.text)
  }

  it("has a series for every query at Prometheus' first scrape, before any request, job or garbage collection", async () => {
    const first = await scrape()
    expect(queryProblems(dashboard, first)).toEqual([])
    // The HTTP series are the first scrape's own (counted once it is answered), the usage series the memory
    // work's to come, all at 0: nothing reached the provider.
    expect(first.get("gateway_http_requests_total")?.get("route")).toEqual(new Set(["/metrics"]))
    expect(first.get("gateway_usage_tokens_total")?.get("work")).toEqual(new Set(["extraction"]))
    expect(up.requests).toEqual([])
  })
})

describe("every query against a real gateway's /metrics", () => {
  let gw: TestGateway
  let up: FakeUpstream
  beforeAll(async () => {
    up = await startFakeUpstream()
    // Chat completions report cached input tokens, so the usage counters have every kind the panels filter on.
    up.handler = (request) =>
      request.path.endsWith("/chat/completions") && request.body?.["stream"] !== true
        ? {
            kind: "json",
            status: 200,
            body: {
              ...completion(),
              usage: {
                prompt_tokens: 40,
                completion_tokens: 7,
                total_tokens: 47,
                prompt_tokens_details: { cached_tokens: 16 }
              }
            }
          }
        : undefined
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test-grafana-upstream",
      SERVICE_API_KEY: SERVICE_KEY,
      ADMIN_API_KEY: ADMIN_KEY,
      // Vectors from the fake provider's /embeddings, so queries are embedded (and timed).
      EMBEDDINGS: "provider",
      // Fewer memories than this are all injected unranked: rank them.
      INJECTION_MAX_MEMORIES: "1",
      // The embedding loop wakes on the jobs' notifications; should one be missed on a loaded machine,
      // the safety-net poll comes within the wait below rather than after 10 s.
      EXTRACTION_POLL_MS: "200",
      // A routed model, so the routing panels' series exist.
      ROUTES_FILE: await routesFile()
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const admin = { authorization: `Bearer ${ADMIN_KEY}` }
  const scrape = async () => {
    const response = await gw.request<string>("GET", "/metrics", { headers: admin })
    expect(response.status).toBe(200)
    return parseScrape(response.text)
  }

  it("names only metrics, labels and label values the gateway exposes", async () => {
    const user = "grafana-user"
    expect((await gw.request("POST", "/api/profiles", { json: { externalId: user }, headers: admin })).status).toBe(201)
    for (const content of ["Prefers vegetarian dinners", "Lives in Lisbon", "Has a dog named Rex"]) {
      const created = await gw.request("POST", `/api/profiles/${user}/memories`, {
        json: { content, type: "fact" },
        headers: admin
      })
      expect(created.status).toBe(201)
    }
    // The background embedding loop gives the memories their vectors.
    await eventually(async () => {
      const [row] = await gw.query<{ count: number }>("SELECT count(*)::int AS count FROM memory_vectors")
      return row!.count === 3 ? true : undefined
    }, 15_000)
    const openai = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: SERVICE_KEY,
      defaultHeaders: { "X-Service-Id": user },
      maxRetries: 0
    })
    // Twice: a context cache miss, then a hit.
    for (const content of ["What should I cook for dinner tonight?", "Something quick, please."])
      await openai.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content }] })
    // A user without memories: no query to embed, so the scripted stream answers the completion.
    up.enqueue({ kind: "sse", frames: chunkFrames(["a", "b"]), intervalMs: 5 })
    const stream = await openai
      .withOptions({ defaultHeaders: { "X-Service-Id": "grafana-streamer" } })
      .chat.completions.create({
        model: "gpt-test",
        stream: true,
        messages: [{ role: "user", content: "And for my dog?" }]
      })
    for await (const _ of stream) {
      /* drained */
    }
    // Usage is counted once written, in batches after the answers.
    const families = await eventually(async () => {
      const scraped = await scrape()
      return scraped.get("gateway_usage_tokens_total")?.get("token")?.has("cached_input") === true ? scraped : undefined
    }, 15_000)
    expect(queryProblems(dashboard, families)).toEqual([])
  })
})
