import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anthropicMessage } from "./support/anthropicWire.ts"
import {
  completion,
  eventually,
  type FakeUpstream,
  type RecordedRequest,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { type Response, startGateway, type TestGateway } from "./support/gateway.ts"

/**
 * Budgets: a key, a namespace or each user of a namespace may spend so many tokens (or so much cost)
 * per UTC day or month; a request made once it is spent answers 429 `budget_exceeded` in its API's
 * error shape, and every answer says what is left.
 */

const ADMIN = "sk-admin-budgets-0123456789"
/** What every scripted answer reports: 150 tokens (120 in, 30 out). */
const PER_REQUEST = 150

const chatUsage = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 }

const answer = (request: RecordedRequest) =>
  request.path.endsWith("/messages")
    ? {
        kind: "json" as const,
        status: 200,
        body: anthropicMessage([{ type: "text", text: "ok" }], "end_turn", { input_tokens: 120, output_tokens: 30 })
      }
    : { kind: "json" as const, status: 200, body: { ...completion({ content: "ok" }), usage: chatUsage } }

interface ErrorBody {
  readonly error?: { readonly message: string; readonly type: string; readonly code: string }
  readonly type?: string
}

describe("budgets", () => {
  let openaiUp: FakeUpstream
  let anthropicUp: FakeUpstream
  let gw: TestGateway
  let replica: TestGateway

  beforeAll(async () => {
    openaiUp = await startFakeUpstream()
    anthropicUp = await startFakeUpstream()
    openaiUp.handler = answer
    anthropicUp.handler = answer
    const prices = join(mkdtempSync(join(tmpdir(), "budget-prices-")), "prices.json")
    // 120 in at 10, 30 out at 20 per million: 0.0018 a request.
    writeFileSync(prices, JSON.stringify({ "gpt-priced": { input: 10, output: 20 } }))
    const env = {
      UPSTREAM_BASE_URL: openaiUp.url,
      UPSTREAM_API_KEY: "sk-test-upstream",
      ANTHROPIC_BASE_URL: anthropicUp.url,
      ANTHROPIC_API_KEY: "sk-ant-test-budgets",
      ADMIN_API_KEY: ADMIN,
      MODEL_PRICES: prices,
      AUTH_FAILURES_PER_MINUTE: "0"
    }
    gw = await startGateway(env)
    replica = await startGateway(env, { databaseUrl: gw.databaseUrl })
  })
  afterAll(async () => {
    await replica?.close()
    await gw?.close()
    await openaiUp?.close()
    await anthropicUp?.close()
  })

  const admin = <T>(method: string, path: string, json?: unknown, target: TestGateway = gw) =>
    target.request<T>(method, path, {
      headers: { authorization: `Bearer ${ADMIN}` },
      ...(json === undefined ? {} : { json })
    })

  /** A key of `namespace`, admitted by both replicas. */
  const newKey = async (namespace: string, budget?: unknown) => {
    const created = await admin<{ id: string; key: string }>("POST", "/api/keys", {
      namespace,
      scope: "app",
      ...(budget === undefined ? {} : { budget })
    })
    expect(created.status).toBe(201)
    for (const target of [gw, replica])
      await eventually(async () => {
        const models = await target.request("GET", "/v1/models", {
          headers: { authorization: `Bearer ${created.body.key}` }
        })
        return models.status === 200 ? true : undefined
      })
    return created.body
  }

  const chat = (target: TestGateway, key: string, user: string, model = "gpt-test"): Promise<Response<ErrorBody>> =>
    target.request<ErrorBody>("POST", "/v1/chat/completions", {
      headers: { authorization: `Bearer ${key}`, "x-service-id": user },
      json: { model, messages: [{ role: "user", content: "hi" }] }
    })

  it("stops its key one request past it, names the budget and its reset, and stops no other key", async () => {
    const limited = await newKey("acme", { tokens: 500, period: "day" })
    const other = await newKey("acme")
    const before = openaiUp.requests.length
    const remaining: Array<string | null> = []
    let refused: Response<ErrorBody> | undefined
    for (let i = 0; i < 8 && refused === undefined; i++) {
      const response = await chat(gw, limited.key, "ann")
      if (response.status === 429) refused = response
      else {
        expect(response.status).toBe(200)
        remaining.push(response.headers.get("x-service-budget-remaining"))
      }
    }
    // 150 tokens a request: after three 450 are spent (under 500), the fourth goes and spends it.
    expect(remaining).toEqual(["tokens=500", "tokens=350", "tokens=200", "tokens=50"])
    expect(openaiUp.requests.length - before).toBe(4)
    expect(refused?.status).toBe(429)
    expect(refused?.body.error).toMatchObject({ type: "rate_limit_error", code: "budget_exceeded" })
    expect(refused?.body.error?.message).toContain("key's budget for this day is spent (600 tokens of 500 tokens)")
    const tomorrow = new Date(
      Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)
    )
    expect(refused?.body.error?.message).toContain(tomorrow.toISOString())
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThan(0)

    // Another key of the namespace goes on, with no budget header.
    const free = await chat(gw, other.key, "ann")
    expect(free.status).toBe(200)
    expect(free.headers.get("x-service-budget-remaining")).toBeNull()

    // The key's listing shows the budget spent, and its usage today.
    const keys = await admin<{
      keys: Array<{
        id: string
        budget: { spent: number; remaining: number } | null
        usage: { tokens: number; requests: number; lastUsedAt: string | null }
      }>
    }>("GET", "/api/keys")
    const listed = keys.body.keys.find((key) => key.id === limited.id)!
    expect(listed.budget).toMatchObject({ tokens: 500, period: "day", spent: 600, remaining: 0 })
    expect(listed.usage).toMatchObject({ period: "day", requests: 4, tokens: 600 })
    expect(listed.usage.lastUsedAt).not.toBeNull()

    // Raised, it admits again at once on the replica that changed it.
    const raised = await admin<{ budget: { remaining: number } }>("PUT", `/api/keys/${limited.id}/budget`, {
      tokens: 1000,
      period: "day"
    })
    expect(raised.status).toBe(200)
    expect(raised.body.budget.remaining).toBe(400)
    expect((await chat(gw, limited.key, "ann")).status).toBe(200)
    // Removed, it is under no budget.
    expect((await admin("DELETE", `/api/keys/${limited.id}/budget`)).body).toEqual({ removed: true })
    const unlimited = await chat(gw, limited.key, "ann")
    expect(unlimited.status).toBe(200)
    expect(unlimited.headers.get("x-service-budget-remaining")).toBeNull()
  })

  it("across replicas, is passed by at most the requests admitted before the usage that spent it was written", async () => {
    const limited = await newKey("replicas", { tokens: 500, period: "month" })
    const before = openaiUp.requests.length
    let admitted = 0
    for (let i = 0; i < 10; i++) {
      const response = await chat(i % 2 === 0 ? gw : replica, limited.key, "bo")
      if (response.status === 200) admitted++
      else expect(response.body.error?.code).toBe("budget_exceeded")
    }
    // Four spend it; a request on the other replica before the fourth's usage was written may go too.
    expect(admitted).toBeGreaterThanOrEqual(4)
    expect(admitted).toBeLessThanOrEqual(5)
    expect(openaiUp.requests.length - before).toBe(admitted)
    // Once written, both replicas refuse.
    await eventually(async () => {
      const usage = await admin<{ usage: Array<{ inputTokens: number; outputTokens: number }> }>(
        "GET",
        `/api/usage?groupBy=key&keyId=${limited.id}`
      )
      const spent = usage.body.usage.reduce((sum, row) => sum + row.inputTokens + row.outputTokens, 0)
      return spent === admitted * PER_REQUEST ? true : undefined
    })
    for (const target of [gw, replica]) expect((await chat(target, limited.key, "bo")).status).toBe(429)
  })

  it("caps a namespace's traffic, and each user's, apart from other namespaces and users", async () => {
    const key = await newKey("globex")
    const elsewhere = await newKey("initech")
    const set = await admin<{ budget: { tokens: number; remaining: number } }>("PUT", "/api/namespaces/globex/budget", {
      tokens: 300,
      period: "month"
    })
    expect(set.status).toBe(200)
    expect(set.body.budget).toMatchObject({ tokens: 300, remaining: 300 })
    expect((await chat(gw, key.key, "u1")).status).toBe(200)
    expect((await chat(gw, key.key, "u2")).status).toBe(200)
    const refused = await chat(gw, key.key, "u3")
    expect(refused.status).toBe(429)
    expect(refused.body.error?.message).toContain("namespace's budget for this month is spent")
    expect((await chat(gw, elsewhere.key, "u1")).status).toBe(200)
    await admin("DELETE", "/api/namespaces/globex/budget")

    // Each user of initech: 200 tokens a day, so two requests each.
    const perUser = await admin("PUT", "/api/namespaces/initech/user-budget", { tokens: 200, period: "day" })
    expect(perUser.status).toBe(200)
    expect((await chat(gw, elsewhere.key, "dee")).status).toBe(200)
    expect((await chat(gw, elsewhere.key, "dee")).status).toBe(200)
    const userRefused = await chat(gw, elsewhere.key, "dee")
    expect(userRefused.status).toBe(429)
    expect(userRefused.body.error?.message).toContain("user's budget for this day is spent")
    expect((await chat(gw, elsewhere.key, "eve")).status).toBe(200)
    const listed = await admin<{ namespaces: Array<{ name: string; userBudget: unknown; budget: unknown }> }>(
      "GET",
      "/api/namespaces"
    )
    expect(listed.body.namespaces.find((ns) => ns.name === "initech")).toMatchObject({
      budget: null,
      userBudget: { tokens: 200, period: "day" }
    })
  })

  it("counts cost at the operator's prices, and refuses in Anthropic's shape on /v1/messages", async () => {
    const key = await newKey("priced", { cost: 0.004, period: "day" })
    // 0.0018 a request: two leave 0.0004, the third spends it.
    const first = await chat(gw, key.key, "pat", "gpt-priced")
    expect(first.headers.get("x-service-budget-remaining")).toBe("cost=0.004")
    const second = await chat(gw, key.key, "pat", "gpt-priced")
    expect(second.headers.get("x-service-budget-remaining")).toBe("cost=0.0022")
    expect((await chat(gw, key.key, "pat", "gpt-priced")).status).toBe(200)
    const messages = await gw.request<ErrorBody>("POST", "/v1/messages", {
      headers: { "x-api-key": key.key, "x-service-id": "pat", "anthropic-version": "2023-06-01" },
      json: { model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }
    })
    expect(messages.status).toBe(429)
    expect(messages.body).toMatchObject({ type: "error", error: { type: "rate_limit_error" } })
    expect(messages.body.error?.message).toContain("key's budget for this day is spent")
  })

  it("refuses a budget that is not one, and a namespace's budget from anyone but the global admin", async () => {
    const key = await newKey("acme")
    for (const body of [
      { period: "day" },
      { tokens: 10, cost: 1, period: "day" },
      { tokens: 0, period: "day" },
      { tokens: 10, period: "week" }
    ]) {
      const response = await admin<ErrorBody>("PUT", `/api/keys/${key.id}/budget`, body)
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(response.body.error?.type).toBe("invalid_request_error")
    }
    expect(
      (
        await admin<ErrorBody>("PUT", "/api/keys/00000000-0000-4000-8000-000000000000/budget", {
          tokens: 5,
          period: "day"
        })
      ).status
    ).toBe(404)
    const acmeAdmin = await admin<{ key: string }>("POST", "/api/keys", { namespace: "acme", scope: "admin" })
    const asAcme = (method: string, path: string, json: unknown) =>
      gw.request<ErrorBody>(method, path, { headers: { authorization: `Bearer ${acmeAdmin.body.key}` }, json })
    const own = await asAcme("PUT", "/api/namespaces/acme/budget", { tokens: 5, period: "day" })
    expect(own.status).toBe(403)
    expect(own.body.error?.code).toBe("budget_not_allowed")
    expect((await asAcme("PUT", "/api/namespaces/globex/user-budget", { tokens: 5, period: "day" })).status).toBe(403)
    expect((await asAcme("PUT", "/api/namespaces/acme/user-budget", { tokens: 5000, period: "day" })).status).toBe(200)
    expect(
      (await admin<ErrorBody>("PUT", "/api/namespaces/Not%20A%20Name/budget", { tokens: 5, period: "day" })).status
    ).toBe(400)
  })
})
