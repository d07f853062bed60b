import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDatabase } from "./support/gateway.ts"
import { freePort, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

let dataDir: string
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "gateway-service-"))
  await chmod(dataDir, 0o755)
})
afterAll(() => rm(dataDir, { recursive: true, force: true }))

const json = (response: Response) => response.json() as Promise<Record<string, unknown>>

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
      expect(await json(read)).toMatchObject({ profile: { externalId: "persistent", traits: [{ key: "name", value: "Grace" }] } })
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
    }
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
    ["API_MAX_BODY_BYTES", { API_MAX_BODY_BYTES: "0" }]
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

  it("never logs secrets, even at the most verbose level", async () => {
    const databaseUrl = await createDatabase()
    const secrets = {
      SERVICE_API_KEY: "sk-secret-service-key",
      UPSTREAM_API_KEY: "sk-secret-upstream-key",
      EXTRACTION_API_KEY: "sk-secret-extraction-key"
    }
    const service = spawnService({ PORT: String(await freePort()), DATABASE_URL: databaseUrl, LOG_LEVEL: "all", ...secrets })
    try {
      await waitUntilHealthy(service)
      const headers = { authorization: `Bearer ${secrets.SERVICE_API_KEY}` }
      expect((await fetch(`${service.baseUrl}/api/profiles`, { headers })).status).toBe(200)
      expect((await fetch(`${service.baseUrl}/api/profiles`, { headers: { authorization: "Bearer sk-secret-guess" } })).status)
        .toBe(401)
    } finally {
      service.child.kill("SIGTERM")
      await service.exited
    }
    expect(service.output()).not.toContain("sk-secret")
    expect(service.output()).not.toContain(decodeURIComponent(new URL(databaseUrl).password))
  })
})
