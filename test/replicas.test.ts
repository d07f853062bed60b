import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LatencyProxy, startLatencyProxy } from "../bench/latencyProxy.ts"
import {
  answerNamingQuestion,
  eventually,
  type FakeUpstream,
  type RecordedRequest,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { createDatabase, startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"

/**
 * Three replicas on one database whose answers arrive late (15 ms, a database in another zone; 150 ms
 * for the third replica, whose change notifications then lag behind the others'): what
 * one replica changes, the others never inject stale once the change is older than the cache's
 * fence; an erased profile is never injected again once its DELETE answered; a turn answered for a
 * profile erased before the turn was written is dropped and counted, never silently.
 */

const FENCE_MS = 300
let up: FakeUpstream
let proxies: Array<LatencyProxy> = []
let replicas: Array<TestGateway> = []
beforeAll(async () => {
  up = await startFakeUpstream()
  const databaseUrl = await createDatabase()
  // Two replicas 15 ms from the database, the third 150 ms (its change notifications arrive that late too).
  for (const delayMs of [15, 15, 150]) {
    const proxy = await startLatencyProxy(databaseUrl, delayMs)
    proxies.push(proxy)
    replicas.push(
      await startGateway(
        {
          UPSTREAM_BASE_URL: up.url,
          UPSTREAM_API_KEY: "sk-test",
          CONTEXT_CACHE_FENCE_MS: String(FENCE_MS)
        },
        { databaseUrl: proxy.url }
      )
    )
  }
})
afterAll(async () => {
  for (const replica of replicas) await replica.close()
  for (const proxy of proxies) await proxy.close()
  replicas = []
  proxies = []
  await up.close()
})

const replicaAt = (i: number) => () => replicas[i]!
const a = replicaAt(0)
const b = replicaAt(1)
const c = replicaAt(2)

/** Asks as the user through a replica; what the gateway injected into the request the provider got (empty: nothing). */
const injected = async (replica: TestGateway, user: string, question: string) => {
  const response = await replica.request("POST", "/v1/chat/completions", {
    json: { model: "m", messages: [{ role: "user", content: question }] },
    headers: { "x-service-id": user }
  })
  expect(response.status).toBe(200)
  const request = up.requests.findLast((r: RecordedRequest) => JSON.stringify(r.body).includes(question))!
  return injectedText(request.body)
}

const setSummary = async (replica: TestGateway, user: string, summary: string) =>
  expect((await replica.request("PATCH", `/api/profiles/${user}`, { json: { summary } })).status).toBe(200)

describe("replicas on one slow database", () => {
  it("inject a change made through another replica", async () => {
    up.handler = answerNamingQuestion
    const user = "replica-change"
    await a().request("POST", "/api/profiles", { json: { externalId: user } })
    for (let round = 0; round < 4; round++) {
      // Every replica has the profile cached as it was.
      for (const replica of [a(), b(), c()]) await injected(replica, user, `warm ${round} ${replicas.indexOf(replica)}`)
      const writer = replicas[round % 3]!
      await setSummary(writer, user, `Lives in city number ${round}.`)
      // Every replica comes to inject the change (how soon is the fence's bound, which bench:replicas measures).
      for (const replica of [a(), b(), c()]) {
        let ask = 0
        await eventually(async () => {
          const block = await injected(replica, user, `after ${round} ${replicas.indexOf(replica)} ${ask++}`)
          return block.includes(`Lives in city number ${round}.`) ? true : undefined
        }, 10_000)
      }
    }
  })

  it("never inject an erased profile once its DELETE answered", async () => {
    up.handler = answerNamingQuestion
    for (let round = 0; round < 4; round++) {
      const user = `replica-erased-${round}`
      await a().request("POST", "/api/profiles", { json: { externalId: user } })
      await setSummary(a(), user, `Secret number ${round}.`)
      for (const replica of [a(), b(), c()]) {
        expect(await injected(replica, user, `before ${round} ${replicas.indexOf(replica)}`)).toContain(
          `Secret number ${round}.`
        )
      }
      const eraser = replicas[round % 3]!
      expect((await eraser.request("DELETE", `/api/profiles/${user}`)).status).toBe(200)
      for (const replica of [a(), b(), c()]) {
        expect(await injected(replica, user, `after ${round} ${replicas.indexOf(replica)}`)).not.toContain(
          `Secret number ${round}`
        )
      }
    }
  })

  it("drop and count a turn answered for a profile erased before the turn was written", async () => {
    const user = "replica-late-turn"
    let release: (reply: Reply) => void = () => {}
    up.handler = (request) =>
      JSON.stringify(request.body).includes("held question")
        ? { kind: "later", reply: new Promise<Reply>((resolve) => (release = resolve)) }
        : answerNamingQuestion(request)
    await b().request("POST", "/api/profiles", { json: { externalId: user } })
    await injected(b(), user, "first question")
    const answer = b().request("POST", "/v1/chat/completions", {
      json: { model: "m", messages: [{ role: "user", content: "held question" }] },
      headers: { "x-service-id": user }
    })
    await eventually(async () =>
      up.requests.some((r) => JSON.stringify(r.body).includes("held question")) ? true : undefined
    )
    expect((await a().request("DELETE", `/api/profiles/${user}`)).status).toBe(200)
    release(answerNamingQuestion(up.requests.find((r) => JSON.stringify(r.body).includes("held question"))!))
    expect((await answer).status).toBe(200)
    const lost = await eventually(async () => {
      const metrics = (await b().request<string>("GET", "/metrics")).text
      const line = metrics.split("\n").find((l) => l.startsWith(`gateway_turns_lost_total{reason="profile_erased"}`))
      return line === undefined ? undefined : Number(line.split(" ").at(-1))
    })
    expect(lost).toBe(1)
    const [row] = await a().query<{ count: number }>(
      "SELECT count(*)::int AS count FROM messages WHERE content IN ('held question', 'answer to held question')"
    )
    expect(row!.count).toBe(0)
  })
})
