import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { GatewayClient, Unauthorized } from "../src/client/index.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const example = fileURLToPath(new URL("../examples/client/main.ts", import.meta.url))
const ADMIN_KEY = "sk-admin-client"

describe("the typed client of the management API", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ ADMIN_API_KEY: ADMIN_KEY })
  })
  afterAll(() => gw.close())

  it("runs the example program: writes, reads, ranks, and gets a typed error", async () => {
    const output = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [example],
        { env: { PATH: process.env["PATH"] ?? "", GATEWAY_URL: gw.baseUrl, GATEWAY_ADMIN_KEY: ADMIN_KEY } },
        (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)))
      )
    )
    expect(output.trim().split("\n")).toEqual([
      'traits: preferred_language="Portuguese"',
      "top memory: Is training for the Lisbon marathon in April",
      "not found: 404 profile_not_found"
    ])
    const stored = await gw.request<{ profile: { traits: Array<{ key: string; value: unknown }> } }>(
      "GET",
      "/api/profiles/client-example",
      { headers: { authorization: `Bearer ${ADMIN_KEY}` } }
    )
    expect(stored.body.profile.traits).toMatchObject([{ key: "preferred_language", value: "Portuguese" }])
  })

  it("fails with the endpoint's typed errors in Effect programs, and acts in the namespace it names", async () => {
    const refused = await Effect.runPromise(
      Effect.flip(
        Effect.flatMap(GatewayClient, (client) => client.profiles.list({ query: {} })).pipe(
          Effect.provide(GatewayClient.layer({ url: gw.baseUrl, apiKey: "wrong" }))
        )
      )
    )
    expect(refused).toBeInstanceOf(Unauthorized)
    expect(refused).toMatchObject({ status: 401, error: { code: "invalid_api_key" } })

    const inAcme = GatewayClient.layer({ url: gw.baseUrl, apiKey: ADMIN_KEY, namespace: "acme" })
    const created = await Effect.runPromise(
      Effect.flatMap(GatewayClient, (client) => client.profiles.create({ payload: { externalId: "acme-user" } })).pipe(
        Effect.provide(inAcme)
      )
    )
    expect(created.profile).toMatchObject({ externalId: "acme-user", namespace: "acme" })
  })
})
