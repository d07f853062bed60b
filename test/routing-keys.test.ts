import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, expect, it } from "vitest"
import { anthropicMessage } from "./support/anthropicWire.ts"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/** A routed target whose key is a key held in the gateway, bound to a provider key (`keyId`). */

const ADMIN = "sk-admin-routing-keys-0123456789"
const APP = "sk-app-routing-keys-0123456789"

let openai: FakeUpstream
let anthropic: FakeUpstream
let gw: TestGateway
let file: string
beforeAll(async () => {
  openai = await startFakeUpstream()
  anthropic = await startFakeUpstream()
  file = join(await mkdtemp(join(tmpdir(), "routes-keys-")), "routes.yaml")
  await writeFile(file, "routes: []\n")
  gw = await startGateway({
    UPSTREAM_BASE_URL: openai.url,
    UPSTREAM_API_KEY: "sk-openai-configured",
    ANTHROPIC_BASE_URL: anthropic.url,
    ADMIN_API_KEY: ADMIN,
    SERVICE_API_KEY: APP,
    KEY_ENCRYPTION_KEY: "b".repeat(64),
    ROUTES_FILE: file
  })
})
afterAll(async () => {
  await gw.close()
  await openai.close()
  await anthropic.close()
})

const admin = { authorization: `Bearer ${ADMIN}` }

it("uses the provider key a held key is bound to, and passes the target by once the key is revoked", async () => {
  const created = await gw.request<{ id: string }>("POST", "/api/keys", {
    json: { upstream: { provider: "anthropic", apiKey: "sk-ant-bound-to-held-key" } },
    headers: admin
  })
  expect(created.status).toBe(201)
  await writeFile(
    file,
    [
      "routes:",
      "  - model: smart",
      "    targets:",
      "      - provider: anthropic",
      "        model: claude-haiku-4-5",
      `        keyId: ${created.body.id}`,
      "      - provider: openai",
      "        model: gpt-4o-mini",
      ""
    ].join("\n")
  )
  const reloaded = await gw.request<{ routes: Array<{ targets: Array<{ keyId: string | null }> }> }>(
    "POST",
    "/api/routes/reload",
    { headers: admin }
  )
  expect(reloaded.status).toBe(200)
  expect(reloaded.body.routes[0]!.targets[0]!.keyId).toBe(created.body.id)

  const client = new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: APP,
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": "held-key-user" }
  })
  anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "hi" }], "end_turn") })
  const first = await client.chat.completions
    .create({ model: "smart", messages: [{ role: "user", content: "Hello" }] })
    .withResponse()
  expect(first.response.headers.get("x-service-upstream")).toBe("anthropic/claude-haiku-4-5")
  expect(anthropic.requests.at(-1)!.headers["x-api-key"]).toBe("sk-ant-bound-to-held-key")

  expect((await gw.request("DELETE", `/api/keys/${created.body.id}`, { headers: admin })).status).toBe(200)
  const second = await client.chat.completions
    .create({ model: "smart", messages: [{ role: "user", content: "Hello again" }] })
    .withResponse()
  expect(second.response.headers.get("x-service-upstream")).toBe("openai/gpt-4o-mini")
  expect(openai.requests.at(-1)!.headers["authorization"]).toBe("Bearer sk-openai-configured")
  expect(anthropic.requests).toHaveLength(1)
})

it("refuses a target with both apiKeyEnv and keyId, naming the line", async () => {
  await writeFile(
    file,
    [
      "routes:",
      "  - model: smart",
      "    targets:",
      "      - provider: anthropic",
      "        model: claude-haiku-4-5",
      "        apiKeyEnv: SOME_KEY",
      "        keyId: abc",
      ""
    ].join("\n")
  )
  const refused = await gw.request<{ error: { code: string; message: string } }>("POST", "/api/routes/reload", {
    headers: admin
  })
  expect(refused.status).toBe(400)
  expect(refused.body.error.code).toBe("invalid_routes_file")
  expect(refused.body.error.message).toContain("line 7")
})
