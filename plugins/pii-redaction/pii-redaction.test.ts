import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { completion, eventually, modelReply, startFakeUpstream } from "../../test/support/fakeUpstream.ts"
import { startGateway } from "../../test/support/gateway.ts"
import { redact } from "./index.ts"

describe("redact", () => {
  it.each([
    ["mail me at ana.lopez+work@example.co.uk please", "mail me at [email] please"],
    ["call +49 30 1234 5678 or (555) 123-4567", "call [phone] or [phone]"],
    ["card 4111 1111 1111 1111 exp 12/29", "card [card] exp 12/29"],
    ["my key is sk-proj-abcdefghijklmnop1234567890", "my key is [secret]"],
    ["AWS AKIAIOSFODNN7EXAMPLE here", "AWS [secret] here"],
    ["order 1234-5678 on 2024-05-01, 3 items", "order 1234-5678 on 2024-05-01, 3 items"],
    ["not a card: 1234 5678 9012 3456", "not a card: 1234 5678 9012 3456"]
  ])("%j", (input, output) => {
    expect(redact(input)).toBe(output)
  })
})

const secretTurn = "I'm ana@example.com, card 4111 1111 1111 1111, key sk-live-abcdefghijklmnopqrstuvwx1234"

const setup = async (env: Record<string, string>) => {
  const chat = await startFakeUpstream()
  const model = await startFakeUpstream()
  model.handler = () => modelReply({ traits: [], memories: [] })
  const gw = await startGateway({
    UPSTREAM_BASE_URL: chat.url,
    UPSTREAM_API_KEY: "sk-test",
    EXTRACTION_BASE_URL: model.url,
    EXTRACTION_CONCURRENCY: "1",
    PLUGINS: "./plugins/pii-redaction",
    ...env
  })
  chat.handler = () => ({ kind: "json", status: 200, body: completion({ content: "Your email is ana@example.com" }) })
  const client = new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "x",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": "private" }
  })
  return { chat, model, gw, client }
}

describe("pii-redaction plugin through the proxy", () => {
  let env: Awaited<ReturnType<typeof setup>>
  beforeAll(async () => {
    env = await setup({})
  })
  afterAll(async () => {
    await env.gw.close()
    await env.chat.close()
    await env.model.close()
  })

  it("stores and extracts only redacted text, and leaves the provider's request alone by default", async () => {
    const answer = await env.client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: secretTurn }]
    })
    expect(answer.choices[0]!.message.content).toBe("Your email is ana@example.com")
    expect(JSON.stringify(env.chat.requests[0]!.body)).toContain("ana@example.com")

    const rows = await eventually(async () => {
      const rows = await env.gw.query<{ content: string }>("SELECT content FROM messages ORDER BY created_at")
      return rows.length === 2 ? rows : undefined
    })
    expect(rows.map((r) => r.content)).toEqual(["I'm [email], card [card], key [secret]", "Your email is [email]"])
    await eventually(async () => (env.model.requests.length > 0 ? true : undefined), 10_000)
    const sentToExtraction = JSON.stringify(env.model.requests[0]!.body)
    expect(sentToExtraction).not.toContain("ana@example.com")
    expect(sentToExtraction).not.toContain("4111")
  })

  it("redacts ingested text too", async () => {
    await env.gw.request("POST", "/api/profiles", { json: { externalId: "ingested" } })
    const res = await env.gw.request("POST", "/api/profiles/ingested/ingest", {
      json: { data: "Reach her at +44 20 7946 0958" }
    })
    expect(res.status).toBe(202)
    const [job] = await env.gw.query<{ input: { data: string } }>(
      "SELECT input FROM extraction_jobs WHERE kind = 'ingest'"
    )
    expect(job!.input.data).toBe("Reach her at [phone]")
  })
})

describe("pii-redaction with PII_REDACT_UPSTREAM=true", () => {
  it("redacts the request sent to the provider as well", async () => {
    const env = await setup({ PII_REDACT_UPSTREAM: "true" })
    try {
      await env.client.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: [{ type: "text", text: secretTurn }] }]
      })
      const sent = JSON.stringify(env.chat.requests[0]!.body)
      expect(sent).not.toContain("ana@example.com")
      expect(sent).toContain("[email]")
    } finally {
      await env.gw.close()
      await env.chat.close()
      await env.model.close()
    }
  })
})
