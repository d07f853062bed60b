import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { completion, eventually, type FakeUpstream, modelReply, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const CAP = 2000

let gw: TestGateway
let chat: FakeUpstream
let model: FakeUpstream
beforeAll(async () => {
  chat = await startFakeUpstream()
  model = await startFakeUpstream()
  model.handler = () => modelReply({ traits: [], memories: [] })
  gw = await startGateway({
    UPSTREAM_BASE_URL: chat.url,
    UPSTREAM_API_KEY: "sk-test-upstream",
    EXTRACTION_BASE_URL: model.url,
    EXTRACTION_API_KEY: "sk-test-extraction",
    EXTRACTION_CONCURRENCY: "1",
    EXTRACTION_MAX_INPUT_CHARACTERS: String(CAP),
    SUMMARY_EVERY_CHANGES: "1000"
  })
})
afterAll(async () => {
  await gw.close()
  await chat.close()
  await model.close()
})

describe("turn text sent to extraction", () => {
  it("is capped at EXTRACTION_MAX_INPUT_CHARACTERS, keeping the newest text", async () => {
    const huge = `OLDEST-START ${"blah ".repeat(200_000)} I live in Lyon NEWEST-END`
    chat.enqueue({ kind: "json", status: 200, body: completion({ content: "Noted, Lyon." }) })
    const res = await gw.request("POST", "/v1/chat/completions", {
      json: { model: "gpt-test", messages: [{ role: "user", content: huge }] },
      headers: { "x-service-id": "huge-talker" }
    })
    expect(res.status).toBe(200)

    const call = await eventually(
      async () => model.requests.find((request) => JSON.stringify(request.body).includes("conversation")),
      15_000
    )
    const data = JSON.parse((call.body!["messages"] as Array<{ content: string }>)[1]!.content) as {
      conversation: Array<{ role: string; content: string }>
    }
    const text = data.conversation.map((line) => line.content).join("")
    expect(text.length).toBeLessThanOrEqual(CAP)
    expect(data.conversation.map((line) => line.role)).toEqual(["user", "assistant"])
    expect(data.conversation[1]!.content).toBe("Noted, Lyon.")
    expect(data.conversation[0]!.content).toContain("I live in Lyon NEWEST-END")
    expect(text).not.toContain("OLDEST-START")
    // The whole message is still recorded: only what the model is sent is cut.
    const [stored] = await gw.query<{ length: number }>(
      "SELECT max(char_length(content))::int AS length FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = 'huge-talker'"
    )
    expect(stored!.length).toBe(huge.length)
  })
})
