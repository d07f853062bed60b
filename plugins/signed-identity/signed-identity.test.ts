import { createHmac } from "node:crypto"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "../../test/support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "../../test/support/gateway.ts"
import { signUserId } from "./index.ts"

const SECRET = "identity-test-secret-0123456789"

const jwt = (claims: Record<string, unknown>, secret = SECRET) => {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const body = `${encode({ alg: "HS256", typ: "JWT" })}.${encode(claims)}`
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`
}

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-test",
    PLUGINS: "./plugins/signed-identity",
    SIGNED_IDENTITY_SECRET: SECRET
  })
  await gw.request("POST", "/api/profiles", { json: { externalId: "victim" } })
  await gw.request("PUT", "/api/profiles/victim/traits/name", { json: { value: "Victoria Secret" } })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})

const chat = (headers: Record<string, string>) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "x",
    maxRetries: 0,
    defaultHeaders: headers
  }).chat.completions.create({ model: "m", messages: [{ role: "user", content: "Who am I?" }] })

describe("signed-identity plugin", () => {
  it("accepts a user id signed with the shared secret", async () => {
    up.reset()
    await chat({ "X-Service-Id": "victim", "X-Service-Id-Signature": signUserId("victim", SECRET) })
    expect(JSON.stringify(up.requests[0]!.body)).toContain("Victoria Secret")
  })

  it("accepts an HS256 token and takes the user from its subject", async () => {
    up.reset()
    await chat({
      "X-Service-Identity": jwt({ sub: "victim", exp: Math.floor(Date.now() / 1000) + 60 }),
      "X-Service-Id": "ignored"
    })
    expect(JSON.stringify(up.requests[0]!.body)).toContain("Victoria Secret")
  })

  it.each([
    ["no signature", { "X-Service-Id": "victim" }],
    [
      "a signature for another user",
      { "X-Service-Id": "victim", "X-Service-Id-Signature": signUserId("attacker", SECRET) }
    ],
    [
      "a signature with another secret",
      { "X-Service-Id": "victim", "X-Service-Id-Signature": signUserId("victim", "guess") }
    ],
    ["a malformed signature", { "X-Service-Id": "victim", "X-Service-Id-Signature": "zz" }],
    ["an expired token", { "X-Service-Identity": jwt({ sub: "victim", exp: 1 }) }],
    ["a token signed with another secret", { "X-Service-Identity": jwt({ sub: "victim" }, "guess") }],
    [
      "an unsigned token",
      {
        "X-Service-Identity": `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from('{"sub":"victim"}').toString("base64url")}.`
      }
    ]
  ])("rejects %s with 401 invalid_user_signature before anything is read or sent", async (_, headers) => {
    up.reset()
    const before = (await gw.counts()).profiles
    const error = await chat(headers).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(error).toMatchObject({ status: 401, code: "invalid_user_signature" })
    expect(up.requests).toHaveLength(0)
    expect((await gw.counts()).profiles).toBe(before)
  })
})

describe("signed-identity without its secret", () => {
  it("stops the start with an error naming the plugin and the variable", async () => {
    const error = await startGateway({ PLUGINS: "./plugins/signed-identity" }).catch((e: unknown) => e)
    expect(String(error)).toContain("signed-identity")
    expect(String(error)).toContain("SIGNED_IDENTITY_SECRET")
  })
})
