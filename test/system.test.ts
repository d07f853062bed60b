import { execFile } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw.close())

describe("health and readiness", () => {
  it("reports liveness and a reachable database", async () => {
    expect(await gw.request("GET", "/health")).toMatchObject({ status: 200, body: { status: "ok" } })
    expect(await gw.request("GET", "/ready")).toMatchObject({ status: 200, body: { status: "ready" } })
  })
})

describe("API description", () => {
  it("serves an OpenAPI document of every management endpoint with the bearer scheme", async () => {
    const res = await gw.request<{
      openapi: string
      paths: Record<string, Record<string, unknown>>
      components: { securitySchemes: Record<string, { scheme: string }> }
    }>("GET", "/openapi.json")
    expect(res.status).toBe(200)
    expect(res.body.openapi).toMatch(/^3\./)
    expect(Object.keys(res.body.paths).sort()).toEqual([
      "/api/jobs",
      "/api/jobs/{jobId}",
      "/api/jobs/{jobId}/retry",
      "/api/keys",
      "/api/keys/{id}",
      "/api/keys/{id}/budget",
      "/api/keys/{id}/rotate",
      "/api/namespaces",
      "/api/namespaces/{name}/budget",
      "/api/namespaces/{name}/memories",
      "/api/namespaces/{name}/memories/import",
      "/api/namespaces/{name}/memories/search",
      "/api/namespaces/{name}/memories/{memoryId}",
      "/api/namespaces/{name}/settings",
      "/api/namespaces/{name}/user-budget",
      "/api/plugins",
      "/api/profiles",
      "/api/profiles/{id}",
      "/api/profiles/{id}/export",
      "/api/profiles/{id}/ingest",
      "/api/profiles/{id}/memories",
      "/api/profiles/{id}/memories/import",
      "/api/profiles/{id}/memories/search",
      "/api/profiles/{id}/memories/{memoryId}",
      "/api/profiles/{id}/messages",
      "/api/profiles/{id}/preview",
      "/api/profiles/{id}/summary/history",
      "/api/profiles/{id}/threads",
      "/api/profiles/{id}/threads/{threadId}",
      "/api/profiles/{id}/traits",
      "/api/profiles/{id}/traits/{key}",
      "/api/profiles/{id}/traits/{key}/history",
      "/api/profiles/{id}/usage",
      "/api/routes",
      "/api/routes/reload",
      "/api/trait-definitions",
      "/api/usage",
      "/api/webhooks",
      "/api/webhooks/{id}",
      "/api/webhooks/{id}/deliveries",
      "/api/webhooks/{id}/deliveries/{deliveryId}/replay",
      "/api/webhooks/{id}/test",
      "/health",
      "/ready",
      "/v1/chat/completions",
      "/v1/conversations",
      "/v1/conversations/{id}",
      "/v1/conversations/{id}/items",
      "/v1/conversations/{id}/items/{itemId}",
      "/v1/messages",
      "/v1/models",
      "/v1/responses",
      "/v1/responses/{id}",
      "/v1/responses/{id}/cancel",
      "/v1/responses/{id}/input_items"
    ])
    expect(Object.keys(res.body.paths["/api/profiles/{id}/traits/{key}"]!).sort()).toEqual(["delete", "put"])
    expect(res.body.components.securitySchemes["bearer"]).toMatchObject({ scheme: "bearer" })
    // The error shape is documented too.
    expect(JSON.stringify(res.body)).toContain('"param"')
  })

  it("documents the proxy from the schemas it decodes with: the fields it reads, the answer, the errors", async () => {
    const res = await gw.request<{ paths: Record<string, Record<string, Record<string, unknown>>> }>(
      "GET",
      "/openapi.json"
    )
    const completions = res.body.paths["/v1/chat/completions"]!["post"]!
    const document = JSON.stringify(res.body)
    expect(JSON.stringify(completions["requestBody"])).toMatch(/ChatCompletionRequest|"messages"/)
    for (const field of ["skipInjection", "include_usage", "finish_reason", "tool_calls"])
      expect(document).toContain(`"${field}"`)
    expect(Object.keys(completions["responses"]!).sort()).toEqual([
      "200",
      "400",
      "401",
      "403",
      "413",
      "429",
      "502",
      "503",
      "504"
    ])
    expect(JSON.stringify(completions["parameters"])).toContain("x-service-id")

    const responses = res.body.paths["/v1/responses"]!["post"]!
    expect(JSON.stringify(responses["requestBody"])).toMatch(/ResponsesRequest|"instructions"/)
    expect(document).toContain('"call_id"')

    const messages = res.body.paths["/v1/messages"]!["post"]!
    expect(JSON.stringify(messages["requestBody"])).toMatch(/MessagesRequest|"system"/)
    expect(document).toContain('"tool_use_id"')
    expect(Object.keys(messages["responses"]!)).toContain("200")
  })

  it("passes Redocly's recommended ruleset (summaries, servers, tags; warnings allowed)", async () => {
    const res = await gw.request("GET", "/openapi.json")
    const dir = await mkdtemp(join(tmpdir(), "openapi-"))
    try {
      const file = join(dir, "openapi.json")
      await writeFile(file, res.text)
      const lint = await promisify(execFile)(
        process.execPath,
        [
          join(import.meta.dirname, "../node_modules/@redocly/cli/bin/cli.js"),
          "lint",
          file,
          "--extends",
          "recommended",
          "--format",
          "summary"
        ],
        { env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } }
      ).catch((error: { stdout: string; stderr: string }) => ({
        stdout: `${error.stdout}\n${error.stderr}`,
        failed: true
      }))
      expect(lint).not.toHaveProperty("failed")
      expect(lint.stdout).not.toMatch(/^error/m)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it("types what generated clients read: counts as integers, flags as booleans, no Infinity or NaN strings", async () => {
    const res = await gw.request<{
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; schema: unknown }> }>>
    }>("GET", "/openapi.json")
    expect(res.text).not.toContain('"Infinity"')
    expect(res.text).not.toContain('"NaN"')
    const query = Object.values(res.body.paths)
      .flatMap((item) => Object.values(item))
      .flatMap((operation) => operation.parameters ?? [])
      .filter((parameter) => parameter.in === "query")
    const typeOf = (name: string) => [
      ...new Set(query.filter((p) => p.name === name).map((p) => JSON.stringify(p.schema)))
    ]
    expect(typeOf("limit")).toEqual(['{"type":"integer"}'])
    expect(typeOf("offset")).toEqual(['{"type":"integer"}'])
    expect(typeOf("wait")).toEqual(['{"type":"boolean"}'])
  })

  it("serves interactive docs", async () => {
    const res = await gw.request<string>("GET", "/docs")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/html")
    // Nothing from elsewhere: the script is in the page, and its default fonts (from a CDN) are off.
    expect(res.text).not.toMatch(/src="https?:\/\//)
    expect(res.text).toContain('"withDefaultFonts":false')
  })
})

describe("internal failures", () => {
  it("answers 500 internal_error with a request id and no database text", async () => {
    await gw.query("ALTER TABLE memories RENAME TO memories_moved")
    try {
      await gw.request("POST", "/api/profiles", { json: { externalId: "breaker" } })
      const res = await gw.request("GET", "/api/profiles/breaker/memories")
      const message = expectError(res, 500, "internal_error")
      const requestId = res.headers.get("x-service-request-id")
      expect(message).toContain(requestId)
      expect(res.text).not.toMatch(/memories|relation|sql|postgres/i)
    } finally {
      await gw.query("ALTER TABLE memories_moved RENAME TO memories")
    }
  })
})

describe("readiness without a database", () => {
  it("answers 503 database_unavailable when the database goes away, while /health stays up", async () => {
    const doomed = await startGateway()
    try {
      const name = new URL(doomed.databaseUrl).pathname.slice(1)
      await gw.query(`DROP DATABASE ${name} WITH (FORCE)`)
      const res = await doomed.request("GET", "/ready")
      expectError(res, 503, "database_unavailable")
      expect(res.text).not.toMatch(/does not exist|postgres/i)
      expect((await doomed.request("GET", "/health")).status).toBe(200)
    } finally {
      await doomed.close()
    }
  })
})
