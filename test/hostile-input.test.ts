import { randomUUID } from "node:crypto"
import fc from "fast-check"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { completion, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { type Response, startGateway, type TestGateway } from "./support/gateway.ts"
import {
  arbitraryBody,
  deepJsonText,
  encodeComponent,
  hostileSegment,
  hostileString,
  jsonFragment,
  objectText,
  rawGarbage,
  tableCounts,
  urlText,
  utf8HeaderValue
} from "./support/hostile.ts"
import { type ErrorJson, expectError } from "./support/wire.ts"

const DEFAULT_KEY = "sk-test-hostile-default-key"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: DEFAULT_KEY,
    // Thousands of /api requests a minute: the per-client limit would answer 429 long before the end.
    RATE_LIMIT_API_PER_MINUTE: "0",
    // One replica: a profile's DELETE need not wait out the fence for others (replicas.test.ts tests it).
    CONTEXT_CACHE_FENCE_MS: "0"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

/** A profile with a trait and a memory, (re)created on demand: property runs may delete it. */
const FIXTURE = "hostile-fixture"
const fixture = async () => {
  const [existing] = await gw.query<{ id: string; memory_id: string }>(
    `SELECT p.id::text AS id, m.id::text AS memory_id FROM profiles p JOIN memories m ON m.profile_id = p.id
     WHERE p.external_id = $1 LIMIT 1`,
    [FIXTURE]
  )
  if (existing !== undefined) return { id: existing.id, externalId: FIXTURE, memoryId: existing.memory_id }
  const created = await gw.request<{ profile: { id: string } }>("POST", "/api/profiles", {
    json: { externalId: FIXTURE }
  })
  const id = created.body.profile.id
  const memory = await gw.request<{ memory: { id: string } }>("POST", `/api/profiles/${id}/memories`, {
    json: { content: "Likes green tea", type: "preference" }
  })
  await gw.request("PUT", `/api/profiles/${id}/traits/name`, { json: { value: "Ada" } })
  return { id, externalId: FIXTURE, memoryId: memory.body.memory.id }
}

const expectNoServerError = (res: Response<unknown>, what: string) => {
  if (res.status >= 500) throw new Error(`${what} answered ${res.status}: ${res.text.slice(0, 500)}`)
}

/** A 4xx has the OpenAI error shape. */
const expectErrorShape = (res: Response<unknown>) => {
  const { error } = res.body as ErrorJson
  expect(typeof error?.code).toBe("string")
  expect(typeof error?.message).toBe("string")
}

describe("text the database cannot hold, on /api", () => {
  const nul = "a\u0000b"
  const lone = "a\ud800b"
  const cases: ReadonlyArray<readonly [string, string, string, unknown, string]> = [
    [
      "memory content with NUL",
      "POST",
      "/api/profiles/{p}/memories",
      { content: nul, type: "fact" },
      "invalid_content"
    ],
    [
      "memory content with a lone surrogate",
      "POST",
      "/api/profiles/{p}/memories",
      { content: lone, type: "fact" },
      "invalid_content"
    ],
    [
      "memory cues with NUL",
      "POST",
      "/api/profiles/{p}/memories",
      { content: "ok", type: "fact", cues: [nul] },
      "invalid_cues"
    ],
    [
      "an imported memory with NUL",
      "POST",
      "/api/profiles/{p}/memories/import",
      {
        memories: [
          { content: "ok", type: "fact" },
          { content: nul, type: "fact" }
        ]
      },
      "invalid_memories"
    ],
    [
      "a memory edit with a lone surrogate",
      "PATCH",
      "/api/profiles/{p}/memories/{m}",
      { content: lone },
      "invalid_content"
    ],
    ["a trait value with NUL", "PUT", "/api/profiles/{p}/traits/name", { value: nul }, "invalid_value"],
    ["a trait value with a lone surrogate", "PUT", "/api/profiles/{p}/traits/name", { value: lone }, "invalid_value"],
    [
      "an object trait value with NUL in a key",
      "PUT",
      "/api/profiles/{p}/traits/custom_obj",
      { value: { [nul]: 1 } },
      "invalid_value"
    ],
    [
      "an object trait value with a lone surrogate inside",
      "PUT",
      "/api/profiles/{p}/traits/custom_obj",
      { value: { a: [lone] } },
      "invalid_value"
    ],
    ["a summary with NUL", "PATCH", "/api/profiles/{p}", { summary: nul }, "invalid_summary"],
    ["a summary with a lone surrogate", "PATCH", "/api/profiles/{p}", { summary: lone }, "invalid_summary"],
    ["ingested data with NUL", "POST", "/api/profiles/{p}/ingest", { data: nul }, "invalid_data"],
    [
      "an ingest source with a lone surrogate",
      "POST",
      "/api/profiles/{p}/ingest",
      { data: "ok", source: lone },
      "invalid_source"
    ],
    ["an external id with a lone surrogate", "POST", "/api/profiles", { externalId: lone }, "invalid_external_id"],
    ["a profile path with NUL", "GET", "/api/profiles/a%00b", undefined, "invalid_profile_id"],
    ["an export path with NUL", "GET", "/api/profiles/%00/export", undefined, "invalid_profile_id"],
    ["a delete path with NUL", "DELETE", "/api/profiles/%00", undefined, "invalid_profile_id"],
    ["a trait history path with NUL", "GET", "/api/profiles/{p}/traits/a%00/history", undefined, "invalid_key"],
    ["a trait delete path with NUL", "DELETE", "/api/profiles/{p}/traits/a%00", undefined, "invalid_key"],
    ["a search with NUL", "GET", "/api/profiles?search=%00", undefined, "invalid_search"]
  ]

  it.each(cases)("refuses %s with 400 and stores nothing", async (_, method, template, json, code) => {
    const { id, memoryId } = await fixture()
    const before = await tableCounts(gw)
    const path = template.replace("{p}", id).replace("{m}", memoryId)
    const res = await gw.request(method, path, json === undefined ? {} : { json })
    expectError(res, 400, code)
    expect(await tableCounts(gw)).toEqual(before)
  })
})

describe("JSON nested too deep", () => {
  it.each([
    [
      "an unknown field of a profile creation",
      "POST",
      "/api/profiles",
      `{"externalId":"deep-1","x":${deepJsonText(5000)}}`
    ],
    [
      "a memory's content",
      "POST",
      "/api/profiles/{p}/memories",
      `{"type":"fact","content":${deepJsonText(5000, "object")}}`
    ],
    ["a trait value", "PUT", "/api/profiles/{p}/traits/custom_deep", `{"value":${deepJsonText(6000, "object")}}`],
    [
      "a trait value just over the limit",
      "PUT",
      "/api/profiles/{p}/traits/custom_deep",
      `{"value":${deepJsonText(128)}}`
    ],
    ["an import", "POST", "/api/profiles/{p}/memories/import", `{"memories":${deepJsonText(5000)}}`]
  ])("in %s is a 400 json_too_deep on /api and stores nothing", async (_, method, template, rawBody) => {
    const { id } = await fixture()
    const before = await tableCounts(gw)
    const res = await gw.request(method, template.replace("{p}", id), { rawBody })
    expect(expectError(res, 400, "json_too_deep")).toContain("128")
    expect(await tableCounts(gw)).toEqual(before)
  })

  it("is accepted up to the limit (128 levels, the body's own object included)", async () => {
    const { id } = await fixture()
    const res = await gw.request("PUT", `/api/profiles/${id}/traits/custom_nested`, {
      rawBody: `{"value":${deepJsonText(127, "object")}}`
    })
    expect(res.status).toBe(200)
  })

  it.each([
    [
      "metadata",
      (deep: string) => `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"metadata":${deep}}`
    ],
    ["a message's content", (deep: string) => `{"model":"gpt-test","messages":[{"role":"user","content":${deep}}]}`],
    [
      "an unknown field",
      (deep: string) => `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"future":${deep}}`
    ]
  ])("in %s is a 400 json_too_deep on the proxy, and nothing is called or stored", async (_, body) => {
    const before = await tableCounts(gw)
    const res = await gw.request("POST", "/v1/chat/completions", {
      rawBody: body(deepJsonText(5000, "object")),
      headers: { "x-service-id": "deep-proxy" }
    })
    expectError(res, 400, "json_too_deep")
    expect(up.requests).toHaveLength(0)
    expect(await tableCounts(gw)).toEqual(before)
  })
})

describe("recorded turns with text the database cannot hold", () => {
  it("answer 200, send the original to the provider and store U+FFFD in its place", async () => {
    const model = "gpt\u0000test\ud800"
    const toolCallId = "call\u0000\udc00"
    const messages = [
      { role: "user", content: "run the tool" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: toolCallId, type: "function", function: { name: "f", arguments: "{}" } }]
      },
      { role: "tool", tool_call_id: toolCallId, content: "result\u0000 here" },
      { role: "user", content: [{ type: "text", text: "and \ud83d now\u0000" }] }
    ]
    up.enqueue({
      kind: "json",
      status: 200,
      body: completion({
        content: "ok\u0000\udfff",
        toolCalls: [{ id: "call_2\u0000", type: "function", function: { name: "g", arguments: '{"a":"\\u0000"}' } }]
      })
    })
    const res = await gw.request("POST", "/v1/chat/completions", {
      json: { model, messages },
      headers: { "x-service-id": "hostile-turn" }
    })
    expect(res.status).toBe(200)
    const sent = up.requests[0]!.body!
    expect(sent["model"]).toBe(model)
    const sentMessages = sent["messages"] as Array<Record<string, unknown>>
    expect(sentMessages.find((m) => m["role"] === "tool")).toMatchObject({
      tool_call_id: toolCallId,
      content: "result\u0000 here"
    })

    const rows = await eventually(async () => {
      const found = await gw.query<{
        role: string
        content: string
        tool_call_id: string | null
        model: string
        tool_calls: unknown
      }>(
        `SELECT m.role, m.content, m.tool_call_id, m.model, m.tool_calls FROM messages m
         JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = 'hostile-turn' ORDER BY m.created_at`
      )
      return found.length === 3 ? found : undefined
    })
    expect(rows.map((row) => row.model)).toEqual(["gpt\ufffdtest\ufffd", "gpt\ufffdtest\ufffd", "gpt\ufffdtest\ufffd"])
    expect(rows[0]).toMatchObject({ role: "tool", content: "result\ufffd here", tool_call_id: "call\ufffd\ufffd" })
    expect(rows[1]).toMatchObject({ role: "user", content: "and \ufffd now\ufffd" })
    expect(rows[2]).toMatchObject({ role: "assistant", content: "ok\ufffd\ufffd" })
    expect(JSON.stringify(rows[2]!.tool_calls)).toContain("call_2\ufffd")
  })
})

describe("upstream error bodies", () => {
  const chat = (headers: Record<string, string> = {}) =>
    gw.request("POST", "/v1/chat/completions", {
      json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] },
      headers: { "x-service-id": "upstream-errors", ...headers }
    })

  it("are read up to 64 KB: a 5 MB error message is relayed cut short", async () => {
    up.enqueue({
      kind: "json",
      status: 400,
      body: { error: { message: `Bad request: ${"x".repeat(5 * 1024 * 1024)}`, type: "invalid_request_error" } }
    })
    const res = await chat()
    const message = expectError(res, 400, "upstream_error")
    expect(message).toMatch(/^Bad request: x+… \(error body cut at 64 KB\)/)
    expect(res.text.length).toBeLessThanOrEqual(64 * 1024 + 1024)
  })

  it("stop being read after 64 KB: the provider sees the connection closed before it finished sending", async () => {
    up.enqueue({ kind: "text", status: 500, body: `upstream exploded ${"y".repeat(32 * 1024 * 1024)}` })
    const res = await chat()
    expect(expectError(res, 500, "upstream_error")).toContain("upstream exploded")
    expect(res.text.length).toBeLessThanOrEqual(64 * 1024 + 1024)
    await eventually(async () => (up.requests[0]?.aborted === true ? true : undefined))
  })

  it("never echo the upstream key, however short", async () => {
    for (const key of ["short1", "k9"]) {
      up.enqueue({
        kind: "json",
        status: 401,
        body: {
          error: {
            message: `Incorrect API key provided: ${key}. Check ${key}!`,
            type: "invalid_request_error",
            code: "invalid_api_key"
          }
        }
      })
      const res = await chat({ "x-upstream-key": key })
      const message = expectError(res, 401, "upstream_error")
      expect(message).toContain("Incorrect API key provided")
      expect(message).not.toContain(key)
    }
  })
})

// ---- property tests ---------------------------------------------------------------------------

type Segment = "id" | "key" | "memoryId" | "jobId"

interface Endpoint {
  readonly method: string
  /** `:name` segments are filled by `segments`. */
  readonly path: string
  readonly query?: Readonly<Record<string, ReadonlyArray<string>>>
  /** Each body field with JSON fragments of plausible values; hostile ones are mixed in. */
  readonly body?: Readonly<Record<string, ReadonlyArray<string>>>
}

const memoryFields = {
  content: ['"Likes tea"', '"  "'],
  type: ['"fact"', '"preference"', '"nope"'],
  importance: ["0.4", "2"],
  cues: ['["tea"]', "[]"],
  occurredAt: ['"2026-03-14"', '"yesterday"'],
  supersedes: ['["$memory"]', "[]"]
}

/** Every endpoint of the management API (src/app/Api.ts and the groups it assembles). */
const ENDPOINTS: ReadonlyArray<Endpoint> = [
  { method: "GET", path: "/health" },
  { method: "GET", path: "/ready" },
  {
    method: "GET",
    path: "/api/profiles",
    query: { limit: ["1", "20", "500"], offset: ["0", "3"], search: ["hostile", "%"] }
  },
  { method: "POST", path: "/api/profiles", body: { externalId: ['"prop-user"', '"  prop-padded  "'] } },
  { method: "GET", path: "/api/profiles/:id" },
  { method: "PATCH", path: "/api/profiles/:id", body: { summary: ['"A summary."', '""'] } },
  { method: "DELETE", path: "/api/profiles/:id" },
  { method: "GET", path: "/api/profiles/:id/export" },
  { method: "GET", path: "/api/profiles/:id/summary/history" },
  // `wait=true` on a valid ingest waits for a worker this gateway does not run: not generated.
  {
    method: "POST",
    path: "/api/profiles/:id/ingest",
    query: { wait: ["false"] },
    body: { data: ['"I moved to Lyon."'], source: ['"crm"'] }
  },
  { method: "GET", path: "/api/profiles/:id/traits" },
  {
    method: "PUT",
    path: "/api/profiles/:id/traits/:key",
    body: { value: ['"Ada"', '["a","b"]', '{"k":1}', "42"], confidence: ["0.5", "7"] }
  },
  { method: "DELETE", path: "/api/profiles/:id/traits/:key" },
  { method: "GET", path: "/api/profiles/:id/traits/:key/history" },
  { method: "GET", path: "/api/profiles/:id/memories", query: { type: ["fact", "nope"], limit: ["5"], offset: ["0"] } },
  { method: "POST", path: "/api/profiles/:id/memories", body: memoryFields },
  {
    method: "PATCH",
    path: "/api/profiles/:id/memories/:memoryId",
    body: { ...memoryFields, occurredAt: ["null", '"2026-01-02T10:00:00Z"'] }
  },
  {
    method: "POST",
    path: "/api/profiles/:id/memories/import",
    body: {
      memories: [
        '[{"content":"Imported","type":"fact"}]',
        "[]",
        '[{"content":"x","type":"fact","createdAt":"2999-01-01"}]'
      ]
    }
  },
  {
    method: "POST",
    path: "/api/profiles/:id/memories/search",
    body: { query: ['"tea"'], limit: ["3", "1000"], type: ['"preference"'] }
  },
  { method: "DELETE", path: "/api/profiles/:id/memories/:memoryId" },
  { method: "GET", path: "/api/jobs", query: { status: ["failed", "pending", "nope"], limit: ["5"] } },
  { method: "GET", path: "/api/jobs/:jobId" },
  { method: "GET", path: "/api/plugins" }
]

const segmentArb = (name: Segment): fc.Arbitrary<string> => {
  const uuid = fc.constant(null).map(() => randomUUID())
  switch (name) {
    case "id":
      return fc.oneof(fc.constantFrom("$id", "$externalId"), uuid, hostileSegment)
    case "key":
      return fc.oneof(fc.constantFrom("name", "interests", "custom_x"), hostileSegment)
    case "memoryId":
      return fc.oneof(fc.constant("$memory"), uuid, hostileSegment)
    case "jobId":
      return fc.oneof(uuid, hostileSegment)
  }
}

const valueArb = (plausible: ReadonlyArray<string>) =>
  fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...plausible) }, { weight: 1, arbitrary: jsonFragment })

const queryValueArb = (plausible: ReadonlyArray<string>) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...plausible).map(encodeComponent) },
    { weight: 2, arbitrary: urlText },
    { weight: 1, arbitrary: rawGarbage }
  )

interface Generated {
  readonly segments: Readonly<Record<string, string>>
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly body: string | undefined
}

const requestArb = (endpoint: Endpoint): fc.Arbitrary<Generated> => {
  const names = [...endpoint.path.matchAll(/:(\w+)/g)].map((match) => match[1] as Segment)
  const segments = fc.record(Object.fromEntries(names.map((name) => [name, segmentArb(name)])))
  const query = fc.array(
    fc.oneof(
      ...Object.entries(endpoint.query ?? {}).map(([name, plausible]) =>
        fc.tuple(fc.constant(name), queryValueArb(plausible))
      ),
      fc.tuple(urlText, urlText)
    ),
    { maxLength: 3 }
  )
  const fields = endpoint.body
  const body: fc.Arbitrary<string | undefined> =
    fields === undefined
      ? fc.constant(undefined)
      : fc.oneof(
          {
            weight: 4,
            arbitrary: fc
              .tuple(
                fc.record(
                  Object.fromEntries(
                    Object.entries(fields).map(([name, plausible]) => [
                      name,
                      fc.option(valueArb(plausible), { nil: undefined })
                    ])
                  )
                ),
                fc.option(fc.tuple(hostileString, jsonFragment), { nil: undefined })
              )
              .map(([values, extra]) =>
                objectText([
                  ...Object.entries(values).flatMap(([name, fragment]) =>
                    fragment === undefined ? [] : [[name, fragment] as const]
                  ),
                  ...(extra === undefined ? [] : [extra])
                ])
              )
          },
          { weight: 1, arbitrary: arbitraryBody }
        )
  return fc.record({ segments, query, body })
}

const fill = (text: string, target: { readonly id: string; readonly externalId: string; readonly memoryId: string }) =>
  text.replaceAll("$memory", target.memoryId).replaceAll("$externalId", target.externalId).replaceAll("$id", target.id)

describe("every /api endpoint, with arbitrary input", () => {
  it.each(ENDPOINTS.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint] as const))(
    "%s never answers 5xx, and a 4xx stores nothing",
    async (name, endpoint) => {
      await fc.assert(
        fc.asyncProperty(requestArb(endpoint), async ({ body, query, segments }) => {
          const target = await fixture()
          const path = endpoint.path.replace(/:(\w+)/g, (_, segment: string) => fill(segments[segment]!, target))
          const search = query.length === 0 ? "" : `?${query.map(([key, value]) => `${key}=${value}`).join("&")}`
          const before = await tableCounts(gw)
          const res = await gw.request(
            endpoint.method,
            path + search,
            body === undefined ? {} : { rawBody: fill(body, target) }
          )
          expectNoServerError(res, `${name} (${path + search})`)
          if (res.status >= 400) {
            expectErrorShape(res)
            expect(await tableCounts(gw)).toEqual(before)
          }
        }),
        { numRuns: 40 }
      )
    }
  )
})

describe("the proxy, with arbitrary input", () => {
  const role = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('"user"', '"assistant"', '"tool"', '"system"', '"developer"') },
    { weight: 1, arbitrary: jsonFragment }
  )
  const text = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom('"hello"', '""') },
    { weight: 2, arbitrary: hostileString.map((s) => JSON.stringify(s)) }
  )
  const content = fc.oneof(
    { weight: 3, arbitrary: text },
    { weight: 1, arbitrary: fc.constant("null") },
    {
      weight: 1,
      arbitrary: fc
        .array(text, { maxLength: 3 })
        .map((parts) => `[${parts.map((t) => `{"type":"text","text":${t}}`).join(",")}]`)
    },
    { weight: 1, arbitrary: jsonFragment }
  )
  const message = fc
    .record({
      role,
      content: fc.option(content, { nil: undefined }),
      tool_call_id: fc.option(text, { nil: undefined }),
      name: fc.option(text, { nil: undefined })
    })
    .map((m) =>
      objectText(Object.entries(m).flatMap(([key, value]) => (value === undefined ? [] : [[key, value] as const])))
    )
  const userId = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('"prop-proxy"', '"prop-proxy-2"') },
    { weight: 1, arbitrary: text },
    { weight: 1, arbitrary: jsonFragment }
  )
  const service = fc.oneof(
    fc.constantFrom(
      '{"skipInjection":true}',
      '{"skipExtraction":true}',
      '{"traits":[{"key":"mood","valueType":"string"}]}'
    ),
    text.map(
      (t) => `{"traits":[{"key":"mood","valueType":"string","description":${t},"injection":{"template":${t}}}]}`
    ),
    jsonFragment
  )
  /** Present with the given probability (in percent), else absent. */
  const field = <A>(arb: fc.Arbitrary<A>, percent: number) =>
    fc.oneof({ weight: percent, arbitrary: arb }, { weight: 100 - percent, arbitrary: fc.constant(undefined) })
  const chatBody = fc
    .record({
      model: fc.oneof(
        { weight: 4, arbitrary: fc.constant('"gpt-test"') },
        { weight: 1, arbitrary: text },
        { weight: 1, arbitrary: jsonFragment }
      ),
      messages: fc.oneof(
        { weight: 5, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }).map((ms) => `[${ms.join(",")}]`) },
        { weight: 1, arbitrary: jsonFragment }
      ),
      user: field(userId, 40),
      metadata: field(
        fc.oneof(
          userId.map((id) => `{"profile_id":${id}}`),
          jsonFragment
        ),
        30
      ),
      stream: field(fc.oneof(fc.constantFrom("false", "true", "null"), jsonFragment), 30),
      service: field(service, 30),
      future: field(jsonFragment, 25)
    })
    .map((fields) =>
      objectText(Object.entries(fields).flatMap(([key, value]) => (value === undefined ? [] : [[key, value] as const])))
    )
  /**
   * Header values are bytes: the UTF-8 of a hostile string, without the control bytes HTTP clients
   * refuse to send, and within Node's 16 KiB of headers (beyond, Node answers 431 itself).
   */
  const asHeader = (s: string) =>
    utf8HeaderValue(s)
      .replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, "")
      .slice(0, 4000)
  const headerValue = hostileString.map(asHeader)
  const headers = fc.record({
    "x-service-id": field(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom("prop-header", " prop-header ") },
        { weight: 1, arbitrary: headerValue }
      ),
      60
    ),
    "x-service-traits": field(
      fc.oneof(fc.constant('[{"key":"mood","valueType":"string"}]'), jsonFragment.map(asHeader)),
      20
    )
  })

  it("never answers 5xx; a 2xx records its turn, a 4xx calls and stores nothing", async () => {
    const statuses: Array<number> = []
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ weight: 5, arbitrary: chatBody }, { weight: 1, arbitrary: arbitraryBody }),
        headers,
        async (body, rawHeaders) => {
          const sent = Object.fromEntries(
            Object.entries(rawHeaders).filter((entry): entry is [string, string] => entry[1] !== undefined)
          )
          const before = await tableCounts(gw)
          const calls = up.requests.length
          const res = await gw.request("POST", "/v1/chat/completions", { rawBody: body, headers: sent })
          statuses.push(res.status)
          expectNoServerError(res, `POST /v1/chat/completions ${body.slice(0, 300)}`)
          if (res.status >= 400) {
            expectErrorShape(res)
            expect(up.requests.length).toBe(calls)
            expect(await tableCounts(gw)).toEqual(before)
          } else {
            // Recording runs after the answer: wait for this request's turn before the next run counts rows.
            const requestId = res.headers.get("x-service-request-id")
            await eventually(async () => {
              const rows = await gw.query("SELECT 1 FROM messages WHERE request_id = $1", [requestId])
              return rows.length > 0 ? true : undefined
            })
          }
        }
      ),
      // Each failing run waits for a turn that never comes: report the first failure as it is.
      { numRuns: 200, endOnFailure: true }
    )
    // The generators reach both outcomes often enough to mean something.
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(10)
    expect(statuses.filter((status) => status >= 400).length).toBeGreaterThan(10)
  }, 120_000)
})
