import { execFile, spawn } from "node:child_process"
import { once } from "node:events"
import { chmod, mkdtemp, readFile, stat, writeFile } from "node:fs/promises"
import { type AddressInfo, createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { completion, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { createDatabase, startGateway, type TestGateway } from "./support/gateway.ts"
import { freePort, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

const cliScript = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url))
const ADMIN_KEY = "sk-admin-cli"

interface CliRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI as an operator would, with only the environment given (and PATH). */
const cli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<CliRun>((resolve) => {
    execFile(
      process.execPath,
      [cliScript, ...args],
      { env: { PATH: process.env["PATH"] ?? "", ...env }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
    )
  })

describe("the CLI against a running gateway", () => {
  let up: FakeUpstream
  let gw: TestGateway
  let dir: string
  let env: Record<string, string>
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({ ADMIN_API_KEY: ADMIN_KEY, UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test-cli" })
    dir = await mkdtemp(join(tmpdir(), "pmg-cli-"))
    env = { GATEWAY_URL: gw.baseUrl, GATEWAY_ADMIN_KEY: ADMIN_KEY }
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const admin = { authorization: `Bearer ${ADMIN_KEY}` }

  it("lists profiles as a table, and as JSON with --json", async () => {
    for (const externalId of ["ana", "ben"])
      await gw.request("POST", "/api/profiles", { json: { externalId }, headers: admin })
    await gw.request("POST", "/api/profiles/ana/memories", {
      json: { content: "Is vegetarian", type: "preference" },
      headers: admin
    })

    const table = await cli(["profiles", "list"], env)
    expect(table.code).toBe(0)
    const lines = table.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^USER\s+NAMESPACE\s+TRAITS\s+MEMORIES\s+MESSAGES\s+LAST ACTIVE$/)
    expect(lines.find((line) => line.startsWith("ana "))).toMatch(/^ana\s+default\s+0\s+1\s+0\s+\d{4}-/)
    expect(lines.at(-1)).toBe("2 of 2")

    const json = await cli(["profiles", "list", "--json", "--search", "an"], env)
    expect(JSON.parse(json.stdout)).toMatchObject({ total: 1, profiles: [{ externalId: "ana" }] })
  })

  it("exports a profile to a file, erases it only with --yes, and imports it back", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "cleo" }, headers: admin })
    await gw.request("PATCH", "/api/profiles/cleo", { json: { summary: "Cleo runs a bakery." }, headers: admin })
    await gw.request("PUT", "/api/profiles/cleo/traits/city", { json: { value: "Lyon" }, headers: admin })
    // As extraction leaves a trait: it must come back extracted, so extraction goes on updating it.
    await gw.request("PUT", "/api/profiles/cleo/traits/oven", {
      json: { value: "wood-fired", confidence: 0.7, source: "extracted" },
      headers: admin
    })
    await gw.request("POST", "/api/profiles/cleo/memories", {
      json: { content: "Opens the bakery at 5 am", type: "fact", tags: ["work"] },
      headers: admin
    })
    const file = join(dir, "cleo.json")

    const exported = await cli(["profiles", "export", "cleo", "-o", file], env)
    expect(exported.code).toBe(0)
    expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({
      profile: { externalId: "cleo", summary: "Cleo runs a bakery." },
      traits: [
        { key: "city", value: "Lyon" },
        { key: "oven", value: "wood-fired" }
      ],
      memories: [{ content: "Opens the bakery at 5 am" }]
    })

    const unconfirmed = await cli(["profiles", "erase", "cleo"], env)
    expect(unconfirmed.code).toBe(1)
    expect(unconfirmed.stderr).toContain("add --yes")
    expect((await gw.request("GET", "/api/profiles/cleo", { headers: admin })).status).toBe(200)

    const erased = await cli(["profiles", "erase", "cleo", "--yes"], env)
    expect(erased.stdout.trim()).toBe("erased cleo: 2 traits, 1 memories, 0 messages")
    expect((await gw.request("GET", "/api/profiles/cleo", { headers: admin })).status).toBe(404)

    const imported = await cli(["profiles", "import", file], env)
    expect(imported.stdout.trim()).toBe("imported cleo: summary, 2 traits, 1 memories")
    const restored = await gw.request<{
      profile: { summary: string; traits: Array<{ key: string; value: unknown }> }
      recentMemories: Array<{ content: string }>
    }>("GET", "/api/profiles/cleo", { headers: admin })
    expect(restored.body.profile.summary).toBe("Cleo runs a bakery.")
    expect(restored.body.profile.traits).toMatchObject([
      { key: "city", value: "Lyon", source: "manual" },
      { key: "oven", value: "wood-fired", source: "extracted", confidence: 0.7 }
    ])
    expect(restored.body.recentMemories.map((m) => m.content)).toEqual(["Opens the bakery at 5 am"])

    // A second import would mix two histories: refused, nothing changed.
    const again = await cli(["profiles", "import", file], env)
    expect(again.code).toBe(1)
    expect(again.stderr).toContain("cleo exists already")
  })

  it("writes an export readable by its owner only, over a file others could read too", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "dora" }, headers: admin })
    const fresh = join(dir, "dora.json")
    expect((await cli(["profiles", "export", "dora", "-o", fresh], env)).code).toBe(0)
    expect((await stat(fresh)).mode & 0o777).toBe(0o600)

    const existing = join(dir, "dora-again.json")
    await writeFile(existing, "an older export")
    await chmod(existing, 0o644)
    expect((await cli(["profiles", "export", "dora", "-o", existing], env)).code).toBe(0)
    expect((await stat(existing)).mode & 0o777).toBe(0o600)
    expect(JSON.parse(await readFile(existing, "utf8"))).toMatchObject({ profile: { externalId: "dora" } })
  })

  it("imports memories from a file, and refuses a malformed one naming it, storing nothing", async () => {
    const file = join(dir, "memories.json")
    await writeFile(
      file,
      JSON.stringify([
        { content: "Allergic to peanuts", type: "fact", importance: 0.9 },
        { content: "Likes jazz", type: "preference", tags: ["music"] }
      ])
    )
    const imported = await cli(["memories", "import", "dana", file], env)
    expect(imported.stderr).toBe("")
    expect(imported.stdout.trim()).toBe("imported 2 memories into dana")
    const listed = await gw.request<{ memories: Array<{ content: string }> }>("GET", "/api/profiles/dana/memories", {
      headers: admin
    })
    expect(listed.body.memories.map((m) => m.content).sort()).toEqual(["Allergic to peanuts", "Likes jazz"])

    const bad = join(dir, "bad.json")
    await writeFile(bad, JSON.stringify([{ content: "No type" }]))
    const refused = await cli(["memories", "import", "erin", bad], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`${bad} does not hold what was expected`)
    expect((await gw.request("GET", "/api/profiles/erin", { headers: admin })).status).toBe(404)
  })

  it("writes to a profile named by its UUID, and keeps a user id that looks like a UUID a user id", async () => {
    const ana = await gw.request<{ profile: { id: string } }>("GET", "/api/profiles/ana", { headers: admin })
    const added = await cli(["memories", "add", ana.body.profile.id, "Speaks Portuguese", "--json"], env)
    expect(JSON.parse(added.stdout)).toMatchObject({ memory: { content: "Speaks Portuguese" } })
    const memories = await gw.request<{ memories: Array<{ content: string }> }>("GET", "/api/profiles/ana/memories", {
      headers: admin
    })
    expect(memories.body.memories.map((m) => m.content)).toContain("Speaks Portuguese")

    // An app whose user ids are UUIDs: a new one is created as a user id, and the memory goes to it.
    const uuidUser = "0b7d9c1e-3f4a-4b5c-8d6e-7f8091a2b3c4"
    const toNew = await cli(["memories", "add", uuidUser, "Likes chess"], env)
    expect(toNew.code).toBe(0)
    const listed = await cli(["profiles", "list", "--json", "--search", "0b7d9c1e"], env)
    expect(JSON.parse(listed.stdout)).toMatchObject({
      total: 1,
      profiles: [{ externalId: uuidUser, counts: { memories: 1 } }]
    })
  })

  it("removes a profile whose import failed half way, so that the import can be tried again", async () => {
    const file = join(dir, "bad-trait.json")
    await writeFile(
      file,
      JSON.stringify({
        profile: { externalId: "gus", summary: "Gus sails." },
        // expertise_level is an enum of the built-in schema: this value is refused.
        traits: [{ key: "expertise_level", value: "wizard", confidence: 1 }],
        memories: []
      })
    )
    const failed = await cli(["profiles", "import", file], env)
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain("the import failed: gus was removed again")
    expect(failed.stderr).toMatch(/error: 400 invalid_trait_value: /)
    expect((await gw.request("GET", "/api/profiles/gus", { headers: admin })).status).toBe(404)
  })

  it("exits 130 when interrupted, so a script never takes an interrupted command for a success", async () => {
    // A gateway that accepts the connection and never answers.
    const sockets: Array<import("node:net").Socket> = []
    const silent = createServer((socket) => sockets.push(socket))
    const connected = once(silent, "connection")
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    const { port } = silent.address() as AddressInfo
    const child = spawn(process.execPath, [cliScript, "profiles", "list"], {
      env: { PATH: process.env["PATH"] ?? "", GATEWAY_URL: `http://127.0.0.1:${port}` }
    })
    const exited = once(child, "exit")
    try {
      await connected
      child.kill("SIGINT")
      expect((await exited)[0]).toBe(130)
    } finally {
      for (const socket of sockets) socket.destroy()
      silent.close()
    }
    const badUrl = await cli(["profiles", "list"], { GATEWAY_URL: "localhost:3100" })
    expect(badUrl.code).toBe(1)
    expect(badUrl.stderr.trim()).toBe("error: --url must be the gateway's http(s) URL, e.g. http://localhost:3100")
  })

  it("searches a user's memories and adds one, creating the profile", async () => {
    const added = await cli(["memories", "add", "finn", "Prefers window seats", "--type", "preference"], env)
    expect(added.stdout).toMatch(/^added memory [0-9a-f-]{36} \(preference, /)
    const found = await cli(["memories", "search", "finn", "window seats on the plane", "--json"], env)
    expect(JSON.parse(found.stdout)).toMatchObject({ memories: [{ content: "Prefers window seats" }] })
    // As a table: whether injection would take each memory.
    const table = await cli(["memories", "search", "finn", "window seats on the plane"], env)
    const [header, row] = table.stdout.split("\n")
    expect(header).toMatch(/^\s*SCORE\s+RELEVANT\s+INJECTED\s+TYPE\s+CONTENT/)
    expect(row).toMatch(/\s(yes|no)\s+yes\s+preference\s+Prefers window seats/)
  })

  it("creates a key whose secret works, and lists keys without secrets", async () => {
    const created = await cli(
      ["keys", "create", "--scope", "admin", "--label", "ops", "--rate-limit", "30", "--json"],
      env
    )
    const key = JSON.parse(created.stdout) as { id: string; key: string }
    expect(key.key).toMatch(/^pmg_/)
    const listed = await cli(["profiles", "list", "--json"], { GATEWAY_URL: gw.baseUrl, GATEWAY_ADMIN_KEY: key.key })
    expect(listed.code).toBe(0)
    // A key made by that key names it in CREATED BY; one made by the environment's key names none.
    const child = await cli(["keys", "create", "--label", "child", "--json"], {
      GATEWAY_URL: gw.baseUrl,
      GATEWAY_ADMIN_KEY: key.key
    })
    const childId = (JSON.parse(child.stdout) as { id: string }).id
    const keys = await cli(["keys", "list"], env)
    expect(keys.stdout).toMatch(new RegExp(`${key.id}\\s+pmg_\\S+\\s+default\\s+admin\\s+ops`))
    const row = (id: string) => keys.stdout.split("\n").find((line) => line.startsWith(id))
    expect(row(childId)).toMatch(new RegExp(`\\s${key.id}$`))
    expect(row(key.id)).toMatch(/\s—$/)
    expect(keys.stdout).not.toContain(key.key)

    // Each key's rate limit, budget and use this period are columns of their own ("—": none).
    await gw.request("PUT", `/api/keys/${childId}/budget`, { json: { tokens: 50000, period: "day" }, headers: admin })
    const table = (await cli(["keys", "list"], env)).stdout
    const header = table.split("\n")[0]!
    expect(header).toMatch(/\sRATE LIMIT\s+PROVIDER\s+BUDGET\s+USAGE\s+LAST USED\s+CREATED\s+EXPIRES\s/)
    /** A row's cell: the text under the column's header, up to the next header. */
    const cell = (line: string | undefined, column: string) => {
      const start = header.indexOf(column)
      const next = header.slice(start + column.length).search(/\S/)
      return line?.slice(start, next === -1 ? undefined : start + column.length + next).trim()
    }
    const lines = table.split("\n")
    const rowOf = (id: string) => lines.find((line) => line.startsWith(id))
    expect(cell(rowOf(key.id), "RATE LIMIT")).toBe("30/min")
    expect(cell(rowOf(key.id), "BUDGET")).toBe("—")
    expect(cell(rowOf(childId), "BUDGET")).toBe("0 of 50000 tokens today")
    // Made by that key, the child inherits its limit; its use is counted per day, as its budget is.
    expect(cell(rowOf(childId), "RATE LIMIT")).toBe("30/min")
    expect(cell(rowOf(childId), "USAGE")).toMatch(/^0 requests, 0 tokens\b.* today$/)
  })

  it("shows the queue's jobs with their user, and says why a call was refused", async () => {
    await gw.request("POST", "/api/profiles/ana/ingest", { json: { data: "Ana moved to Porto." }, headers: admin })
    const jobs = await cli(["jobs", "list"], env)
    expect(jobs.stdout).toMatch(/pending [1-9]/)
    expect(jobs.stdout).toMatch(/ingest\s+ana\s+0\s+\S+\s+queued/)

    const wrongKey = await cli(["profiles", "list"], { GATEWAY_URL: gw.baseUrl, GATEWAY_ADMIN_KEY: "wrong" })
    expect(wrongKey.code).toBe(1)
    expect(wrongKey.stderr).toMatch(/^error: 401 invalid_api_key: /)
    const missing = await cli(["profiles", "show", "nobody"], env)
    expect(missing.stderr.trim()).toBe("error: 404 profile_not_found: No profile with id or external id 'nobody'")
    const down = await cli(["profiles", "list"], { GATEWAY_URL: "http://127.0.0.1:9" })
    expect(down.stderr.trim()).toBe("error: cannot reach the gateway at http://127.0.0.1:9 (is it running? --url)")
  })

  it("reports token usage as a table and as the API's JSON, and names a bad day", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: {
        ...completion({ model: "gpt-cli" }),
        usage: {
          prompt_tokens: 120,
          completion_tokens: 30,
          total_tokens: 150,
          prompt_tokens_details: { cached_tokens: 64 }
        }
      }
    })
    const chat = await gw.request("POST", "/v1/chat/completions", {
      json: { model: "gpt-cli", messages: [{ role: "user", content: "hello" }] },
      headers: { "x-service-id": "hana" }
    })
    expect(chat.status).toBe(200)
    // Usage is written in batches after the answers: wait until the report holds it.
    const json = await eventually(async () => {
      const run = await cli(["usage", "--group-by", "model", "--user", "hana", "--json"], env)
      expect(run.code).toBe(0)
      const body = JSON.parse(run.stdout) as { usage: Array<{ requests: number }> }
      return body.usage.length > 0 ? body : undefined
    }, 30_000)
    expect(json).toMatchObject({
      period: { from: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), to: expect.stringMatching(/^\d{4}-/) },
      usage: [
        {
          group: "gpt-cli",
          requests: 1,
          inputTokens: 120,
          cachedInputTokens: 64,
          outputTokens: 30,
          memoryWorkTokens: 0,
          cost: null
        }
      ]
    })

    const table = await cli(["usage", "--group-by", "model", "--user", "hana"], env)
    expect(table.code).toBe(0)
    const lines = table.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^\d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} \(UTC\), by model$/)
    expect(lines[1]).toMatch(/^MODEL\s+REQUESTS\s+INPUT\s+CACHED\s+OUTPUT\s+INJECTED\s+MEMORY WORK\s+COST$/)
    expect(lines[2]).toMatch(/^gpt-cli\s+1\s+120\s+64\s+30\s+\d+\s+0\s+—$/)

    // The profile's own report is the same user's.
    const profile = await cli(["usage", "--profile", "hana", "--group-by", "model", "--json"], env)
    expect(JSON.parse(profile.stdout)).toMatchObject({ usage: [{ group: "gpt-cli", requests: 1 }] })

    const badDay = await cli(["usage", "--from", "2026-13-01"], env)
    expect(badDay.code).toBe(1)
    expect(badDay.stderr.trim()).toBe("error: 400 invalid_usage_period: 'from' must be a day, YYYY-MM-DD (UTC)")
    const both = await cli(["usage", "--profile", "hana", "--user", "hana"], env)
    expect(both.code).toBe(1)
    expect(both.stderr.trim()).toBe("error: --profile names one user already: not with --user or --key")
  })

  it("shows and changes a namespace's settings, and sorts a memory into one of its categories", async () => {
    const file = join(dir, "settings.json")
    await writeFile(file, JSON.stringify({ memoryCategories: [{ name: "music", description: "What they play" }] }))
    const configured = await cli(
      [
        "namespaces",
        "configure",
        "band",
        "--file",
        file,
        "--instructions",
        "Note instruments.",
        "--memory-days",
        "event=30"
      ],
      env
    )
    expect(configured.code).toBe(0)
    expect(configured.stdout).toContain("extraction instructions: Note instruments.")
    expect(configured.stdout).toContain("memory categories: music (What they play)")
    expect(configured.stdout).toContain("memories event 30 d")

    // One part of the retention changed: the rest stays.
    expect((await cli(["namespaces", "configure", "band", "--turns-days", "10"], env)).code).toBe(0)
    const shown = await cli(["namespaces", "settings", "band", "--json"], env)
    expect(JSON.parse(shown.stdout)).toMatchObject({
      extractionInstructions: "Note instruments.",
      retention: { turnsDays: 10, memoryDays: { event: 30 } }
    })

    const added = await cli(["memories", "add", "drummer", "Plays the drums", "--category", "music", "--json"], {
      ...env,
      GATEWAY_NAMESPACE: "band"
    })
    expect(JSON.parse(added.stdout)).toMatchObject({ memory: { category: "music" } })
    const refused = await cli(["memories", "add", "drummer", "Likes jazz", "--category", "genres"], {
      ...env,
      GATEWAY_NAMESPACE: "band"
    })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("400 unknown_category")

    const badDays = await cli(["namespaces", "configure", "band", "--memory-days", "secret=3"], env)
    expect(badDays.code).toBe(1)
    expect(badDays.stderr).toContain("--memory-days secret=3")
  })

  it("keeps a namespace's shared knowledge: added, imported, listed and removed", async () => {
    const added = await cli(
      ["namespaces", "knowledge", "add", "store", "Returns are free within 30 days", "--json"],
      env
    )
    expect(added.code).toBe(0)
    const { memory } = JSON.parse(added.stdout) as { memory: { id: string } }
    const file = join(dir, "knowledge.json")
    await writeFile(
      file,
      JSON.stringify([
        { content: "Shipping to Canada takes a week", type: "fact" },
        { content: "Returns are free within 30 days", type: "fact" }
      ])
    )
    const imported = await cli(["namespaces", "knowledge", "import", "store", file], env)
    expect(imported.stdout.trim()).toBe("imported 1 shared memories into store (1 it had already)")

    const listed = await cli(["namespaces", "knowledge", "list", "store"], env)
    expect(listed.stdout).toContain("Shipping to Canada takes a week")
    expect(listed.stdout.trim().split("\n").at(-1)).toBe("2 of 2")

    expect((await cli(["namespaces", "knowledge", "remove", "store", memory.id], env)).stdout.trim()).toBe(
      `removed ${memory.id}`
    )
    const after = await cli(["namespaces", "knowledge", "list", "store", "--json"], env)
    expect(JSON.parse(after.stdout)).toMatchObject({ total: 1 })
  })
})

describe("doctor", () => {
  it("fails on a broken configuration, naming the variable", async () => {
    const run = await cli(["doctor"], { EXTRACTION_CONCURRENCY: "many", GATEWAY_URL: "http://127.0.0.1:9" })
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/configuration\s+FAIL\s+.*EXTRACTION_CONCURRENCY/)
    expect(run.stderr.trim()).toBe("error: failed: configuration")
  })

  it("checks the database, the provider and its key, the extraction model and a running gateway", async () => {
    const up = await startFakeUpstream()
    up.handler = (request) =>
      request.path.endsWith("/models") && request.headers["authorization"] !== "Bearer sk-good"
        ? { kind: "json", status: 401, body: { error: { message: "bad key", type: "auth", code: "invalid_api_key" } } }
        : undefined
    const base = {
      DATABASE_URL: await createDatabase(),
      UPSTREAM_BASE_URL: up.url,
      EXTRACTION_MODEL: "gpt-test",
      EMBEDDINGS: "off",
      GATEWAY_URL: "http://127.0.0.1:9"
    }
    try {
      const healthy = await cli(["doctor", "--json"], { ...base, UPSTREAM_API_KEY: "sk-good" })
      expect(healthy.code).toBe(0)
      expect(JSON.parse(healthy.stdout)).toEqual([
        { name: "configuration", status: "ok", detail: "every variable is valid" },
        {
          name: "database",
          status: "ok",
          detail: expect.stringMatching(/^PostgreSQL \d+\S*, \d+ migrations to apply/)
        },
        { name: "upstream", status: "ok", detail: `openai at ${up.url} answers` },
        { name: "extraction", status: "ok", detail: `gpt-test at ${up.url}` },
        { name: "embeddings", status: "warn", detail: expect.stringContaining("EMBEDDINGS=off") },
        { name: "gateway", status: "warn", detail: "none running at http://127.0.0.1:9" }
      ])

      // `migrate` applies the schema and exits; doctor then finds nothing to apply.
      const migrated = await cli(["migrate"], base)
      expect(migrated.code).toBe(0)
      expect(migrated.stdout).toContain("the database schema is up to date")
      const after = await cli(["doctor", "--json"], { ...base, UPSTREAM_API_KEY: "sk-good" })
      expect(JSON.parse(after.stdout)).toContainEqual({
        name: "database",
        status: "ok",
        detail: expect.stringMatching(/^PostgreSQL \d+\S*, schema up to date$/)
      })

      const refused = await cli(["doctor"], {
        ...base,
        UPSTREAM_API_KEY: "sk-bad",
        DATABASE_URL: "postgres://nobody:x@127.0.0.1:9/none"
      })
      expect(refused.code).toBe(1)
      expect(refused.stdout).toMatch(/database\s+FAIL\s+cannot use DATABASE_URL/)
      expect(refused.stdout).toMatch(/upstream\s+FAIL\s+openai at \S+ refused the key \(401\)/)
      expect(refused.stderr.trim()).toBe("error: failed: database, upstream, extraction")
    } finally {
      await up.close()
    }
  })

  it("checks the routes file: each target's key and endpoint, and the line of what is wrong", async () => {
    // One target answers (with the key its apiKeyEnv names); the other's port has nothing listening.
    const up = await startFakeUpstream()
    up.handler = (request) =>
      request.path.endsWith("/models") && request.headers["authorization"] !== "Bearer sk-second"
        ? { kind: "json", status: 401, body: { error: { message: "bad key", type: "auth", code: "invalid_api_key" } } }
        : undefined
    const closed = `http://127.0.0.1:${await freePort()}/v1`
    const dir = await mkdtemp(join(tmpdir(), "pmg-doctor-routes-"))
    const file = join(dir, "routes.json")
    const text = JSON.stringify(
      {
        routes: [
          {
            model: "smart",
            targets: [
              { provider: "openai", model: "gpt-test", baseUrl: up.url, apiKeyEnv: "SECOND_KEY" },
              { provider: "openai", model: "gpt-backup", baseUrl: closed, order: 1 }
            ]
          }
        ]
      },
      null,
      2
    )
    await writeFile(file, text)
    const base = {
      DATABASE_URL: await createDatabase(),
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-second",
      EMBEDDINGS: "off",
      EXTRACTION_CONCURRENCY: "0",
      GATEWAY_URL: "http://127.0.0.1:9",
      ROUTES_FILE: file
    }
    const routeChecks = (stdout: string) =>
      (JSON.parse(stdout) as Array<{ name: string; status: string; detail: string }>).filter((check) =>
        check.name.startsWith("route")
      )
    try {
      const run = await cli(["doctor", "--json"], { ...base, SECOND_KEY: "sk-second" })
      expect(run.code).toBe(1)
      expect(routeChecks(run.stdout)).toEqual([
        { name: "routes", status: "ok", detail: `${file}: smart (2 targets)` },
        {
          name: "route smart: openai/gpt-test",
          status: "ok",
          detail: `openai at ${up.url} answers (key from SECOND_KEY)`
        },
        {
          name: "route smart: openai/gpt-backup",
          status: "fail",
          detail: expect.stringMatching(new RegExp(`^openai at ${closed} is unreachable: `))
        }
      ])
      expect(run.stderr.trim()).toBe("error: failed: route smart: openai/gpt-backup")
      // The probe went where the target is, with the target's own key, as the gateway sends it.
      expect(
        up.requests.filter((request) => request.path === "/v1/models").map((r) => r.headers["authorization"])
      ).toContain("Bearer sk-second")

      // The variable its apiKeyEnv names is not set: the gateway would not start; the line says where.
      const unset = await cli(["doctor", "--json"], base)
      expect(unset.code).toBe(1)
      const keyLine = text.split("\n").findIndex((line) => line.includes('"apiKeyEnv"')) + 1
      expect(routeChecks(unset.stdout)[1]).toEqual({
        name: "route smart: openai/gpt-test",
        status: "fail",
        detail: `line ${keyLine}: SECOND_KEY (its apiKeyEnv) is not set: the gateway does not start with this file`
      })

      // A file the gateway would refuse (here YAML): what is wrong, on which line; no target is probed.
      await writeFile(
        file,
        [
          "routes:",
          "  - model: smart",
          "    targets:",
          "      - provider: openai",
          "        model: gpt-test",
          "        weight: -1",
          ""
        ].join("\n")
      )
      const bad = await cli(["doctor", "--json"], { ...base, SECOND_KEY: "sk-second" })
      expect(bad.code).toBe(1)
      expect(routeChecks(bad.stdout)).toEqual([
        {
          name: "routes",
          status: "fail",
          detail: expect.stringMatching(
            new RegExp(`^ROUTES_FILE ${file}: line 6 \\(routes\\.0\\.targets\\.0\\.weight\\): `)
          )
        }
      ])
      expect(bad.stderr.trim()).toBe("error: failed: routes")
    } finally {
      await up.close()
    }
  })

  it("names the process that holds the embedded database, the cause of a start that fails with it in use", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "pmg-doctor-"))
    // Reachable by the "postgres" user the embedded server runs as when the tests run as root.
    await chmod(dataDir, 0o755)
    const running = spawnService({ PORT: String(await freePort()), DATA_DIR: dataDir, EMBEDDINGS: "off" })
    try {
      await waitUntilHealthy(running)
      const databaseCheck = async (gatewayUrl: string) => {
        const run = await cli(["doctor", "--json"], { DATA_DIR: dataDir, EMBEDDINGS: "off", GATEWAY_URL: gatewayUrl })
        return (JSON.parse(run.stdout) as Array<{ name: string; status: string; detail: string }>).find(
          (check) => check.name === "database"
        )
      }
      // The gateway answering at --url is the one it serves: nothing wrong.
      expect(await databaseCheck(running.baseUrl)).toMatchObject({
        status: "ok",
        detail: expect.stringMatching(
          new RegExp(`^embedded PostgreSQL in ${dataDir}/postgres serves a running gateway \\(process \\d+\\)$`)
        )
      })
      // No gateway where the operator looks: the holder is what would stop a start, named with the way out.
      const held = await databaseCheck("http://127.0.0.1:9")
      expect(held).toMatchObject({ status: "fail" })
      expect(held!.detail).toMatch(
        new RegExp(
          `^embedded PostgreSQL in ${dataDir}/postgres is in use by process (\\d+), and no gateway answers at --url: stop that process \\(\`kill \\1\`\\)`
        )
      )
    } finally {
      running.child.kill("SIGTERM")
      await running.exited
    }
    const stopped = await cli(["doctor", "--json"], {
      DATA_DIR: dataDir,
      EMBEDDINGS: "off",
      GATEWAY_URL: "http://127.0.0.1:9"
    })
    expect(JSON.parse(stopped.stdout)).toContainEqual({
      name: "database",
      status: "ok",
      detail: `embedded PostgreSQL data in ${dataDir}/postgres (not running)`
    })
  })
})
