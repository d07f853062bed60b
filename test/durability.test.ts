import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkStored, runUsers } from "../bench/answeredTurns.ts"
import { answerNamingQuestion, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { createDatabase, startGateway, type TestGateway } from "./support/gateway.ts"
import { freePort, type ServiceProcess, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  up.handler = answerNamingQuestion
})
afterAll(() => up.close())

const messagesOf = (gw: TestGateway, externalId: string) =>
  gw.query<{ role: string; content: string }>(
    `SELECT m.role, m.content FROM messages m JOIN profiles p ON p.id = m.profile_id
     WHERE p.external_id = $1 ORDER BY m.created_at, m.id`,
    [externalId]
  )

describe("a turn whose answer the client has in full is stored", () => {
  let gw: TestGateway
  beforeAll(async () => {
    // A long group-commit window: a turn written after the answer went out would be missed below.
    gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test", RECORD_BATCH_MS: "200" })
  })
  afterAll(() => gw.close())

  it("before the end of a non-streamed body", async () => {
    const response = await gw.request<{ choices: Array<{ message: { content: string } }> }>(
      "POST",
      "/v1/chat/completions",
      {
        headers: { "x-service-id": "durable-body" },
        json: { model: "m", messages: [{ role: "user", content: "remember the blue door" }] }
      }
    )
    expect(response.status).toBe(200)
    expect(response.headers.get("x-service-memory")).toBe("available")
    // No waiting: the turn is already there when the client has the body.
    expect(await messagesOf(gw, "durable-body")).toEqual([
      { role: "user", content: "remember the blue door" },
      { role: "assistant", content: "answer to remember the blue door" }
    ])
  })

  it("before a stream's [DONE]", async () => {
    const response = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-id": "durable-stream" },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "remember the red gate" }] })
    })
    expect(await response.text()).toContain("data: [DONE]")
    expect(await messagesOf(gw, "durable-stream")).toEqual([
      { role: "user", content: "remember the red gate" },
      { role: "assistant", content: "answer to remember the red gate" }
    ])
  })
})

describe("kill -9 of the gateway under load", () => {
  let service: ServiceProcess | undefined
  afterAll(async () => {
    service?.child.kill("SIGKILL")
    await service?.exited
  })

  it("loses no answered turn and stores none twice", async () => {
    const env = {
      PORT: String(await freePort()),
      DATABASE_URL: await createDatabase(),
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test",
      EXTRACTION_CONCURRENCY: "0",
      EMBEDDINGS: "off",
      LOG_LEVEL: "warn"
    }
    const first = spawnService(env)
    service = first
    await waitUntilHealthy(first)
    const users = 40
    const turnsPerUser = 3
    // Killed once 40% of the turns are answered, while the rest are in flight.
    const killAt = Math.round(users * turnsPerUser * 0.4)
    const answered = await runUsers({
      baseUrl: first.baseUrl,
      userIds: Array.from({ length: users }, (_, i) => `crash-${i}`),
      turnsPerUser,
      onAnswered: (count) => {
        if (count === killAt) first.child.kill("SIGKILL")
      }
    })
    await first.exited
    expect(answered.length).toBeGreaterThanOrEqual(killAt)

    const second = spawnService(env)
    service = second
    await waitUntilHealthy(second)
    const check = await checkStored(second.baseUrl, answered)
    expect(check.missing).toEqual([])
    expect(check.duplicated).toEqual([])
    second.child.kill("SIGTERM")
    expect(await second.exited).toBe(0)
  })
})
