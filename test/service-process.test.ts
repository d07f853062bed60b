import { randomBytes } from "node:crypto"
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeCollector } from "./support/fakeCollector.ts"
import { eventually, startFakeUpstream } from "./support/fakeUpstream.ts"
import { createDatabase } from "./support/gateway.ts"
import { freePort, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

let dataDir: string
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "gateway-service-"))
  await chmod(dataDir, 0o755)
})
afterAll(() => rm(dataDir, { recursive: true, force: true }))

const json = (response: Response) => response.json() as Promise<Record<string, unknown>>

interface LogEntry {
  readonly message: unknown
  readonly level: string
  readonly annotations: Record<string, unknown>
  readonly traceId?: string
}

/** Every line of the output, each parsed as the JSON object it must be. */
const jsonLines = (output: string): Array<LogEntry> =>
  output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as LogEntry)

describe("the service process on its embedded database", () => {
  it("keeps profiles across a graceful restart and exits 0 on SIGTERM", async () => {
    const port = String(await freePort())
    const env = { PORT: port, DATA_DIR: join(dataDir, "graceful") }
    const first = spawnService(env)
    await waitUntilHealthy(first)
    const created = await fetch(`${first.baseUrl}/api/profiles`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ externalId: "persistent" })
    })
    expect(created.status).toBe(201)
    await fetch(`${first.baseUrl}/api/profiles/persistent/traits/name`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ value: "Grace" })
    })
    first.child.kill("SIGTERM")
    expect(await first.exited).toBe(0)
    expect(first.output()).toContain("embedded PostgreSQL stopped")

    const second = spawnService(env)
    try {
      await waitUntilHealthy(second)
      const read = await fetch(`${second.baseUrl}/api/profiles/persistent`)
      expect(read.status).toBe(200)
      expect(await json(read)).toMatchObject({
        profile: { externalId: "persistent", traits: [{ key: "name", value: "Grace" }] }
      })
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
  })

  it("shuts down, its PostgreSQL too, when the process that started it is killed (npm start killed by its pid)", async () => {
    // A parent like npm: it starts the gateway with the same output, and is then killed outright.
    const wrapper = join(dataDir, "parent.mjs")
    const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
    await writeFile(
      wrapper,
      `import { spawn } from "node:child_process"\nspawn(process.execPath, [${JSON.stringify(main)}], { stdio: "inherit" })\n`
    )
    const parent = spawnService({ PORT: String(await freePort()), DATA_DIR: join(dataDir, "orphaned") }, wrapper)
    await waitUntilHealthy(parent)
    parent.child.kill("SIGKILL")
    await parent.exited
    await eventually(async () => (parent.output().includes("embedded PostgreSQL stopped") ? true : undefined), 30_000)
    expect(parent.output()).toContain("the parent process")
    await expect(fetch(`${parent.baseUrl}/health`)).rejects.toThrow()
  })

  it("starts again after a hard kill left its database server running", async () => {
    const port = String(await freePort())
    const env = { PORT: port, DATA_DIR: join(dataDir, "killed") }
    const first = spawnService(env)
    await waitUntilHealthy(first)
    await fetch(`${first.baseUrl}/api/profiles`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ externalId: "survivor" })
    })
    first.child.kill("SIGKILL")
    await first.exited

    const second = spawnService(env)
    try {
      await waitUntilHealthy(second)
      expect(second.output()).toContain("stopping orphaned PostgreSQL")
      expect((await fetch(`${second.baseUrl}/api/profiles/survivor`)).status).toBe(200)
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
  })
})

describe("configuration errors", () => {
  it.each([
    ["PORT", { PORT: "not-a-port" }],
    ["UPSTREAM_BASE_URL", { UPSTREAM_BASE_URL: "ftp://example.com" }],
    ["LOG_LEVEL", { LOG_LEVEL: "loud" }],
    ["API_MAX_BODY_BYTES", { API_MAX_BODY_BYTES: "0" }],
    // A probability now.
    ["MEMORY_RELEVANCE_FLOOR", { MEMORY_RELEVANCE_FLOOR: "1.5" }],
    // A hand-set weight the fitted ranking replaced: refused, not silently ignored.
    ["MEMORY_RANK_KEYWORD_WEIGHT", { MEMORY_RANK_KEYWORD_WEIGHT: "0.5" }]
  ])("fails at start naming %s", async (variable, env) => {
    const service = spawnService({ DATA_DIR: join(dataDir, "never"), ...env })
    expect(await service.exited).toBe(1)
    expect(service.output()).toContain(variable)
  })

  it("fails at start naming TRAITS_FILE when the trait schema is malformed", async () => {
    const file = join(dataDir, "traits.json")
    await writeFile(file, JSON.stringify({ mood: { type: "enum" } }))
    const service = spawnService({ DATABASE_URL: await createDatabase(), TRAITS_FILE: file })
    expect(await service.exited).toBe(1)
    expect(service.output()).toContain("TRAITS_FILE")
    expect(service.output()).toContain("mood")
  })

  it("fails at start with one JSON line naming the variable when LOG_FORMAT=json", async () => {
    const service = spawnService({ DATA_DIR: join(dataDir, "never"), LOG_FORMAT: "json", PORT: "not-a-port" })
    expect(await service.exited).toBe(1)
    const lines = jsonLines(service.output())
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: "ERROR", message: expect.stringContaining("PORT") })
  })

  it("reports a failure while starting as JSON too", async () => {
    const file = join(dataDir, "traits-json.json")
    await writeFile(file, JSON.stringify({ mood: { type: "enum" } }))
    const service = spawnService({ DATABASE_URL: await createDatabase(), TRAITS_FILE: file, LOG_FORMAT: "json" })
    expect(await service.exited).toBe(1)
    const failure = jsonLines(service.output()).at(-1)
    expect(failure).toMatchObject({ level: "ERROR", message: expect.stringContaining("TRAITS_FILE") })
  })

  it("with LOG_FORMAT=json writes one JSON object per line, names each line's trace, and never logs the exporter's headers", async () => {
    const collector = await startFakeCollector()
    // The collector refuses the export: the gateway logs that failure, with its request, at debug level.
    collector.status = 400
    const service = spawnService({
      PORT: String(await freePort()),
      DATABASE_URL: await createDatabase(),
      LOG_FORMAT: "json",
      LOG_LEVEL: "all",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_HEADERS: "x-otlp-key=sk-secret-otlp-key",
      OTEL_BSP_SCHEDULE_DELAY: "50"
    })
    const traceId = randomBytes(16).toString("hex")
    try {
      await waitUntilHealthy(service)
      const traceparent = `00-${traceId}-${randomBytes(8).toString("hex")}-01`
      expect((await fetch(`${service.baseUrl}/api/profiles`, { headers: { traceparent } })).status).toBe(200)
      await eventually(async () => (service.output().includes("Disabling exporter") ? true : undefined), 15_000)
    } finally {
      service.child.kill("SIGTERM")
      await service.exited
      await collector.close()
    }
    const lines = jsonLines(service.output())
    for (const line of lines) expect(typeof line.message).toBe("string")
    // The request's debug line: its fields among the annotations, its trace the caller's.
    expect(lines.find((line) => line.message === "handled" && line.traceId === traceId)?.annotations).toMatchObject({
      path: "/api/profiles",
      status: 200
    })
    expect(collector.exports[0]?.headers["x-otlp-key"]).toBe("sk-secret-otlp-key")
    expect(service.output()).not.toContain("sk-secret-otlp-key")
  })

  it("logs a provider's failure and throttling at the default level, without its key", async () => {
    const provider = await startFakeUpstream()
    provider.enqueue(
      { kind: "json", status: 500, body: { error: { message: "The server had an error" } } },
      { kind: "json", status: 429, body: { error: { message: "Rate limit reached" } } }
    )
    const service = spawnService({
      PORT: String(await freePort()),
      DATABASE_URL: await createDatabase(),
      UPSTREAM_BASE_URL: provider.url,
      UPSTREAM_API_KEY: "sk-secret-provider-key",
      // Each scripted failure relayed, not retried.
      UPSTREAM_RETRIES: "0"
    })
    try {
      await waitUntilHealthy(service)
      for (const status of [500, 429]) {
        const answer = await fetch(`${service.baseUrl}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-service-id": "logged" },
          body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] })
        })
        // The provider's status, relayed.
        expect(answer.status).toBe(status)
      }
      await eventually(async () => (service.output().includes("upstream openai answered 429") ? true : undefined))
      expect(service.output()).toContain("upstream openai answered 500: The server had an error")
    } finally {
      service.child.kill("SIGTERM")
      await service.exited
      await provider.close()
    }
    expect(service.output()).not.toContain("sk-secret")
  })

  it("never logs secrets, even at the most verbose level", async () => {
    const databaseUrl = await createDatabase()
    const secrets = {
      SERVICE_API_KEY: "sk-secret-service-key",
      UPSTREAM_API_KEY: "sk-secret-upstream-key",
      EXTRACTION_API_KEY: "sk-secret-extraction-key"
    }
    const service = spawnService({
      PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "all",
      ...secrets
    })
    try {
      await waitUntilHealthy(service)
      const headers = { authorization: `Bearer ${secrets.SERVICE_API_KEY}` }
      expect((await fetch(`${service.baseUrl}/api/profiles`, { headers })).status).toBe(200)
      expect(
        (await fetch(`${service.baseUrl}/api/profiles`, { headers: { authorization: "Bearer sk-secret-guess" } }))
          .status
      ).toBe(401)
    } finally {
      service.child.kill("SIGTERM")
      await service.exited
    }
    expect(service.output()).not.toContain("sk-secret")
    expect(service.output()).not.toContain(decodeURIComponent(new URL(databaseUrl).password))
  })
})
