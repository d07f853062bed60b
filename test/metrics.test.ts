import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chunkFrames, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const SERVICE_KEY = "sk-service-metrics"
const auth = { authorization: `Bearer ${SERVICE_KEY}` }

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test-default-upstream", SERVICE_API_KEY: SERVICE_KEY })
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

const client = new OpenAI({
  baseURL: "",
  apiKey: SERVICE_KEY,
  maxRetries: 0,
  defaultHeaders: { "X-Service-Id": "metrics-user" }
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
    const stream = await openai.chat.completions.create({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "again" }] })
    for await (const _ of stream) { /* drained */ }
    const created = await gw.request<{ profile: { id: string } }>("POST", "/api/profiles", { json: { externalId: "metrics-other" }, headers: auth })
    await gw.request("GET", `/api/profiles/${created.body.profile.id}`, { headers: auth })
    await gw.request("GET", "/api/profiles/00000000-0000-4000-8000-000000000000", { headers: auth })
    await gw.request("GET", "/no/such/path/7f3a", { headers: auth })
    // Both turns, with their jobs, were written before their answers ended.
    await eventually(async () => {
      const [row] = await gw.query<{ count: number }>("SELECT count(*)::int AS count FROM extraction_jobs")
      return row!.count === 2 ? true : undefined
    })

    // The gateway runs in this process: hold its event loop for 60 ms.
    await new Promise((resolve) => setTimeout(resolve, 50))
    const blockedUntil = performance.now() + 60
    while (performance.now() < blockedUntil) { /* busy */ }
    await new Promise((resolve) => setTimeout(resolve, 30))

    const { text, samples } = await scrape()
    const chat = `route="/v1/chat/completions",method="POST",status="200"`
    expect(samples.get(`gateway_http_requests_total{${chat}}`)).toBe(2)
    expect(samples.get(`gateway_http_request_duration_seconds_count{${chat}}`)).toBe(2)
    expect(samples.get(`gateway_http_requests_total{route="/api/profiles/:id",method="GET",status="200"}`)).toBe(1)
    expect(samples.get(`gateway_http_requests_total{route="/api/profiles/:id",method="GET",status="404"}`)).toBe(1)
    expect(samples.get(`gateway_http_requests_total{route="unmatched",method="GET",status="404"}`)).toBe(1)
    // Ids and unknown paths never become labels.
    expect(text).not.toContain(created.body.profile.id)
    expect(text).not.toContain("7f3a")

    expect(samples.get(`gateway_upstream_response_seconds_count{provider="openai"}`)).toBe(2)
    expect(samples.get(`gateway_overhead_seconds_count`)).toBe(2)
    expect(samples.get(`gateway_stream_first_chunk_seconds_count`)).toBe(1)
    // The first request loads the profile, the second finds it cached.
    expect(samples.get(`gateway_context_cache_lookups_total{result="miss"}`)).toBe(1)
    expect(samples.get(`gateway_context_cache_lookups_total{result="hit"}`)).toBe(1)
    expect(samples.get(`gateway_context_cache_entries`)).toBe(1)
    // No worker runs in this test: both recorded turns wait in the queue.
    expect(samples.get(`gateway_extraction_jobs{status="pending"}`)).toBe(2)
    expect(samples.get(`gateway_extraction_jobs{status="running"}`)).toBe(0)
    expect(samples.get(`gateway_extraction_lag_seconds`)).toBeGreaterThan(0)
    expect(samples.get(`gateway_event_loop_delay_seconds{quantile="1"}`)).toBeGreaterThanOrEqual(0.04)
    expect(samples.get(`gateway_event_loop_delay_seconds{quantile="0.5"}`)).toBeLessThan(0.04)
    expect(samples.get(`gateway_event_loop_utilization`)).toBeGreaterThan(0)
    expect(samples.get(`gateway_event_loop_utilization`)).toBeLessThanOrEqual(1)
    // The scrape in progress is the only request in flight.
    expect(samples.get(`gateway_http_requests_in_flight`)).toBe(1)
  })
})
