import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "../../test/support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "../../test/support/gateway.ts"
import { injectedText } from "../../test/support/injected.ts"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test", PLUGINS: "./plugins/clock" })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})

const ask = async (user: string) => {
  up.reset()
  const client = new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "x",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": user }
  })
  const { response } = await client.chat.completions
    .create({ model: "m", messages: [{ role: "user", content: "What day is it?" }] })
    .withResponse()
  const system = injectedText(up.requests[0]!.body)
  return { system, receipt: JSON.parse(response.headers.get("x-service-context")!) as { plugins: Array<string> } }
}

describe("clock plugin", () => {
  it("injects the current date and time in the user's time zone", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "in-tokyo" } })
    await gw.request("PUT", "/api/profiles/in-tokyo/traits/timezone", { json: { value: "Asia/Tokyo" } })
    const { receipt, system } = await ask("in-tokyo")
    const expected = new Intl.DateTimeFormat("en-GB", { timeZone: "Asia/Tokyo", dateStyle: "full" }).format(new Date())
    expect(system).toContain(`Current time for the user: ${expected}`)
    expect(system).toContain("(Asia/Tokyo)")
    expect(receipt.plugins).toContain("clock")
  })

  it("falls back to UTC without a valid time zone", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "nowhere" } })
    await gw.request("PUT", "/api/profiles/nowhere/traits/timezone", { json: { value: "Mars/Olympus" } })
    expect((await ask("nowhere")).system).toContain("(UTC)")
  })
})
