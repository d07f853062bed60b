import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { completion, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let up: FakeUpstream
let gw: TestGateway
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-upstream",
    RATE_LIMIT_USER_PER_MINUTE: "2"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})

const clientFor = (user: string) =>
  new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { "X-Service-Id": user } })

describe("per user id on /v1 (RATE_LIMIT_USER_PER_MINUTE)", () => {
  it("reports the user's bucket in OpenAI's headers, then refuses with 429 before calling the provider", async () => {
    const alice = clientFor("alice")
    for (const remaining of ["1", "0"]) {
      up.enqueue({ kind: "json", status: 200, body: completion({ content: "ok" }) })
      const { response } = await alice.chat.completions
        .create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
        .withResponse()
      expect(response.headers.get("x-ratelimit-limit-requests")).toBe("2")
      expect(response.headers.get("x-ratelimit-remaining-requests")).toBe(remaining)
    }
    const calls = up.requests.length
    const error = await alice.chat.completions
      .create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "rate_limit_error" })
    const headers = (error as InstanceType<typeof OpenAI.RateLimitError>).headers
    expect(headers.get("x-ratelimit-remaining-requests")).toBe("0")
    expect(Number(headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect((error as Error).message).toContain("this user")
    // Refused before the provider was called.
    expect(up.requests.length).toBe(calls)

    // Another user, the same key (none here): a bucket of their own.
    up.enqueue({ kind: "json", status: 200, body: completion({ content: "ok" }) })
    const answer = await clientFor("bob").chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "hi" }]
    })
    expect(answer.choices[0]?.message.content).toBe("ok")
  })
})
