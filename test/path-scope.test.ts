import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { classifyPath, scopeOf } from "../src/app/pathKind.ts"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { type RouteEntry, routeTable } from "./support/routeTable.ts"
import { expectError } from "./support/wire.ts"

/**
 * A key's scope is decided on the path the router serves (issue 38): every way of writing a route's
 * path that the router serves as that route — other letter case, percent-encoded letters, repeated or
 * trailing slashes, `;…` — meets the same key check as the path itself.
 */

const APP = "sk-app-path-scope"
const ADMIN = "sk-admin-path-scope"

let gw: TestGateway
let up: FakeUpstream
let routes: ReadonlyArray<RouteEntry>
const keys: Record<string, string | undefined> = { none: undefined, "environment app": APP, "environment admin": ADMIN }

beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-upstream-path-scope",
    SERVICE_API_KEY: APP,
    ADMIN_API_KEY: ADMIN,
    RATE_LIMIT_API_PER_MINUTE: "0"
  })
  for (const scope of ["app", "admin"] as const) {
    const created = await gw.request<{ key: string }>("POST", "/api/keys", {
      json: { namespace: "scoped", scope },
      headers: { authorization: `Bearer ${ADMIN}` }
    })
    keys[`namespace ${scope}`] = created.body.key
  }
  routes = await routeTable(gw.databaseUrl)
})
afterAll(async () => {
  await gw.close()
  await up.close()
})

/** A route's template as a path it serves: parameters and wildcards filled in. */
const concrete = (template: string) =>
  template
    .replace(/:[A-Za-z]+/g, "x1")
    .replace(/\*$/, "anything")
    .replace(/\/$/, "") || "/"

/** Other ways of writing a path that the router serves as that path. */
const variants = (path: string): ReadonlyArray<string> => {
  const second = path.charCodeAt(1)
  const encoded = Number.isNaN(second) ? [] : [`/%${second.toString(16)}${path.slice(2)}`]
  return [
    path.toUpperCase(),
    `${path}/`,
    `/${path}`,
    path.replace(/\/([^/]*)$/, "//$1"),
    `${path};x`,
    ...encoded,
    path.replace(/[a-z]/g, (letter) => `%${letter.charCodeAt(0).toString(16)}`)
  ]
}

/** What the key check made of a request: the refusal, or that it went on to the route. */
const outcome = async (method: string, path: string, key: string | undefined) => {
  const response = await gw.request(method, path, {
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    ...(method === "GET" || method === "HEAD" || method === "DELETE" ? {} : { json: {} })
  })
  const code = (response.body as { error?: { code?: string } } | undefined)?.error?.code
  return response.status === 401 || response.status === 403 ? `${response.status} ${code}` : "admitted"
}

describe("the key check sees the path the router serves", () => {
  it("finds the gateway's routes", () => {
    const paths = new Set(routes.map((route) => route.path))
    for (const path of ["/v1/chat/completions", "/api/profiles/:id", "/metrics", "/mcp", "/v1/*", "/health"])
      expect(paths).toContain(path)
  })

  it("gives every variant of every route's path, with every kind of key, the canonical path's outcome", async () => {
    const mismatches: Array<string> = []
    for (const route of routes) {
      const method = route.method === "*" ? "GET" : route.method
      const path = concrete(route.path)
      for (const [kind, key] of Object.entries(keys)) {
        const expected = await outcome(method, path, key)
        const seen = await Promise.all(variants(path).map((variant) => outcome(method, variant, key)))
        variants(path).forEach((variant, index) => {
          if (seen[index] !== expected)
            mismatches.push(`${method} ${variant} with ${kind} key: ${seen[index]}, but ${path}: ${expected}`)
        })
      }
    }
    expect(mismatches).toEqual([])
  })

  it("refuses a namespace's admin key on /metrics however it is written", async () => {
    for (const path of ["/metrics", "/METRICS", "/metrics/", "//metrics", "/%6detrics", "/metrics;x"]) {
      const answer = await gw.request("GET", path, { headers: { authorization: `Bearer ${keys["namespace admin"]}` } })
      expect(expectError(answer, 403, "insufficient_scope"), path).toContain("ADMIN_API_KEY")
    }
  })

  it("refuses admin keys on the proxy however its path is written, sending nothing to the provider", async () => {
    up.reset()
    for (const path of ["/v1/chat/completions", "/V1/chat/completions", "/%761/chat/completions", "/v1//embeddings"]) {
      const answer = await gw.request("POST", path, {
        json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] },
        headers: { authorization: `Bearer ${ADMIN}`, "X-Service-Id": "path-scope" }
      })
      expectError(answer, 403, "insufficient_scope")
    }
    expect(up.requests).toEqual([])
  })
})

/** Path segments that have reached SQL as errors before: NUL, broken UTF-8, blank, over-long. */
const HOSTILE_SEGMENTS = ["%00", "a%00b", "%ED%A0%80", "%C0", "%20", "x".repeat(201), "x".repeat(1100), "%F0%9F%98%80"]

describe("hostile path parameters on every route", () => {
  it("answer 4xx with an error body, never a server error, whatever the route", async () => {
    await gw.request("POST", "/api/profiles", {
      json: { externalId: "hostile-paths" },
      headers: { authorization: `Bearer ${ADMIN}` }
    })
    const failures: Array<string> = []
    for (const route of routes.filter((entry) => entry.path.includes(":"))) {
      const method = route.method === "*" ? "GET" : route.method
      const key = scopeOf(classifyPath(route.path)) === "app" ? APP : ADMIN
      // Every parameter hostile; and, behind a profile that exists, every other one.
      const paths = HOSTILE_SEGMENTS.flatMap((segment) => [
        route.path.replace(/:[A-Za-z]+/g, segment),
        route.path.replace(/:id\b/, "hostile-paths").replace(/:[A-Za-z]+/g, segment)
      ])
      for (const path of new Set(paths)) {
        const answer = await gw.request(method, path, {
          headers: { authorization: `Bearer ${key}`, "X-Service-Id": "hostile-paths" },
          ...(method === "GET" || method === "DELETE" ? {} : { json: {} })
        })
        const code = (answer.body as { error?: { code?: string } } | undefined)?.error?.code
        if (answer.status >= 500 || (answer.status >= 400 && code === undefined))
          failures.push(`${method} ${path.slice(0, 120)}: ${answer.status} ${answer.text.slice(0, 120)}`)
      }
    }
    expect(failures).toEqual([])
  })
})
