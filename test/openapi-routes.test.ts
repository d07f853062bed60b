import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { routeTable } from "./support/routeTable.ts"

/**
 * The OpenAPI document (`/openapi.json`) lists every route the gateway serves, and only those: the
 * routes are read as the server registers them, so a route added without its declaration fails here,
 * and so does a declaration left behind by a route that is gone.
 */

/** Served but not part of the HTTP API the document describes, each for a reason. */
const UNDOCUMENTED = new Set([
  "GET /openapi.json", // the document itself
  "GET /docs", // its page
  "GET /", // leads to the console
  "GET /console/*", // the console's page (`/console`, `/console/`) and its files
  "GET /metrics", // Prometheus' exposition format
  "* /v1/*", // everything else under /v1 goes to the provider as sent (its own API)
  "* /v1/v1/*" // a client whose base URL ends in /v1 twice: answered 404 with the fix
])

/** The MCP protocol (Streamable HTTP, every method at one path) describes itself: its tools and resources. */
const isMcp = (route: string) => route.endsWith(" /mcp")

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({})
})
afterAll(() => gw.close())

/** `/v1/responses/:id` as OpenAPI writes it: `/v1/responses/{id}`. */
const asOpenApi = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}")

describe("the OpenAPI document", () => {
  it("lists every route the gateway serves, with its method", async () => {
    const document = (await gw.request<{ paths: Record<string, Record<string, unknown>> }>("GET", "/openapi.json")).body
    const documented = new Set(
      Object.entries(document.paths).flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`)
      )
    )
    const served = [...new Set((await routeTable(gw.databaseUrl)).map(({ method, path }) => `${method} ${path}`))]
    expect(served.length).toBeGreaterThan(50)
    const missing = served
      .filter((route) => !UNDOCUMENTED.has(route) && !isMcp(route))
      .filter((route) => {
        const [method, path] = route.split(" ") as [string, string]
        return !documented.has(`${method} ${asOpenApi(path)}`)
      })
    expect(missing).toEqual([])

    // Every operation documented is served (a client generated from the document reaches each one)…
    const servedAsOpenApi = new Set(
      served.map((route) => {
        const [method, path] = route.split(" ") as [string, string]
        return `${method} ${asOpenApi(path)}`
      })
    )
    expect([...documented].filter((operation) => !servedAsOpenApi.has(operation))).toEqual([])
    // …and every route left out is still served: the list of exceptions does not outlive its routes.
    expect([...UNDOCUMENTED].filter((route) => !served.includes(route))).toEqual([])
    expect(served.filter(isMcp)).not.toEqual([])
  })
})
