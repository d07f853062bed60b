import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  completion,
  eventually,
  type FakeUpstream,
  modelReply,
  startFakeUpstream
} from "../../test/support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "../../test/support/gateway.ts"
import { categoryOf, findScore } from "./index.ts"

describe("finding a score", () => {
  it.each([
    ["I'd give you a 9/10, great stuff", 9],
    ["honestly 6 out of 10", 6],
    ["I would rate you 10", 10],
    ["I'd give it a 3.", 3],
    ["I have 3 kids and 2 dogs", undefined],
    ["it took 10 minutes", undefined]
  ])("in %j", (text, score) => {
    expect(findScore(text)?.score).toBe(score)
  })

  it("maps scores to NPS groups", () => {
    expect([10, 9, 8, 7, 6, 0].map(categoryOf)).toEqual([
      "promoter",
      "promoter",
      "passive",
      "passive",
      "detractor",
      "detractor"
    ])
  })
})

describe("nps plugin through the proxy", () => {
  let gw: TestGateway
  let chat: FakeUpstream
  let model: FakeUpstream
  beforeAll(async () => {
    chat = await startFakeUpstream()
    model = await startFakeUpstream()
    model.handler = () =>
      modelReply({ traits: [{ key: "nps_category", value: "promoter", confidence: 1 }], memories: [] })
    gw = await startGateway({
      UPSTREAM_BASE_URL: chat.url,
      UPSTREAM_API_KEY: "sk-test",
      EXTRACTION_BASE_URL: model.url,
      EXTRACTION_CONCURRENCY: "1",
      PLUGINS: "./plugins/nps"
    })
  })
  afterAll(async () => {
    await gw.close()
    await chat.close()
    await model.close()
  })

  it("extracts the NPS group for traits with behaviour nps, without the model deciding it", async () => {
    chat.enqueue({ kind: "json", status: 200, body: completion({ content: "Thanks!" }) })
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "x",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "surveyed" }
    })
    await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "Honestly I'd give you a 6/10, the app keeps crashing." }],
      // @ts-expect-error the gateway's own field
      service: {
        traits: [
          { key: "nps_category", valueType: "enum", enum: ["promoter", "passive", "detractor"], behaviour: "nps" }
        ]
      }
    })
    const traits = await eventually(async () => {
      const res = await gw.request<{ traits: Array<{ key: string; value: unknown; source: string }> }>(
        "GET",
        "/api/profiles/surveyed/traits"
      )
      return res.body.traits.length > 0 ? res.body.traits : undefined
    }, 10_000)
    // The model claimed "promoter"; the trait belongs to the plugin, which read the 6.
    expect(traits).toMatchObject([{ key: "nps_category", value: "detractor", source: "extracted" }])
    const memories = await gw.request<{ memories: Array<{ content: string }> }>(
      "GET",
      "/api/profiles/surveyed/memories"
    )
    expect(memories.body.memories.map((m) => m.content)).toContain("The user rated the product 6 out of 10 (detractor)")
    const schemaSent = JSON.parse((model.requests[0]!.body!["messages"] as Array<{ content: string }>)[1]!.content) as {
      trait_schema: Array<{ key: string }>
    }
    expect(schemaSent.trait_schema.map((t) => t.key)).not.toContain("nps_category")
  })

  it("refuses a behaviour no plugin provides with 400", async () => {
    const res = await gw.request("POST", "/v1/chat/completions", {
      json: {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        service: { traits: [{ key: "x", valueType: "string", behaviour: "csat" }] }
      },
      headers: { "x-service-id": "typo" }
    })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: { code: "invalid_service_options" } })
    expect(JSON.stringify(res.body)).toContain("csat")
  })
})
