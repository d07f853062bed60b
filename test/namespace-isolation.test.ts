import fc from "fast-check"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const ADMIN = "sk-admin-isolation-0123456789"
const NAMESPACES = ["north", "south"] as const
type Namespace = (typeof NAMESPACES)[number]
/** The same user ids in both namespaces. */
const USERS = ["ana", "ben", "cleo"] as const

type Operation = {
  readonly kind: "chat" | "memory" | "trait" | "erase"
  readonly namespace: Namespace
  readonly user: string
}

/**
 * Two apps on one gateway, each with its own keys, using the same user ids. Whatever either does —
 * chats (recorded turns, injection), memories, traits, erasures — nothing written in one namespace
 * ever shows in the other: not in the provider's requests, exports, searches, profile or job lists.
 */
describe("two namespaces with colliding user ids", () => {
  let up: FakeUpstream
  let gw: TestGateway
  const keys = {} as Record<Namespace, { app: string; admin: string }>
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      SERVICE_API_KEY: "sk-app-isolation-0123456789",
      ADMIN_API_KEY: ADMIN
    })
    for (const namespace of NAMESPACES) {
      const create = async (scope: "app" | "admin") =>
        (
          await gw.request<{ key: string }>("POST", "/api/keys", {
            headers: { authorization: `Bearer ${ADMIN}` },
            json: { namespace, scope }
          })
        ).body.key
      keys[namespace] = { app: await create("app"), admin: await create("admin") }
    }
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const admin = <T>(namespace: Namespace, method: string, path: string, json?: unknown) =>
    gw.request<T>(method, path, {
      headers: { authorization: `Bearer ${keys[namespace].admin}` },
      ...(json === undefined ? {} : { json })
    })

  let counter = 0
  /** A word no other operation uses, marked with its namespace. */
  const word = (namespace: Namespace) => `${namespace}mark${++counter}`
  const other = (namespace: Namespace): Namespace => (namespace === "north" ? "south" : "north")
  const leaks = (text: string, namespace: Namespace) => text.includes(`${other(namespace)}mark`)

  const run = async ({ kind, namespace, user }: Operation) => {
    const secret = word(namespace)
    if (kind === "chat") {
      const client = new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: keys[namespace].app, maxRetries: 0 })
      await client.chat.completions.create(
        { model: "gpt-test", messages: [{ role: "user", content: `Remember ${secret}` }] },
        { headers: { "x-service-id": user } }
      )
      // What the provider got for this namespace's user: its own memory only.
      expect(leaks(JSON.stringify(up.requests.at(-1)!.body), namespace)).toBe(false)
      return
    }
    if (kind === "erase") {
      await admin(namespace, "DELETE", `/api/profiles/${user}`)
      return
    }
    await admin(namespace, "POST", "/api/profiles", { externalId: user })
    if (kind === "memory") {
      const added = await admin(namespace, "POST", `/api/profiles/${user}/memories`, {
        content: `${user} keeps ${secret} in mind`,
        type: "fact"
      })
      expect(added.status).toBe(201)
    } else {
      const set = await admin(namespace, "PUT", `/api/profiles/${user}/traits/nickname`, { value: secret })
      expect(set.status).toBe(200)
    }
  }

  const operation: fc.Arbitrary<Operation> = fc.record({
    kind: fc.constantFrom("chat", "memory", "trait", "erase", "memory", "chat"),
    namespace: fc.constantFrom(...NAMESPACES),
    user: fc.constantFrom(...USERS)
  })

  it("property: nothing one namespace writes appears in the other's exports, searches, lists or provider requests", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 8 }), async (operations) => {
        for (const op of operations) await run(op)
        for (const namespace of NAMESPACES) {
          const listed = await admin<{ profiles: Array<{ namespace: string; id: string }> }>(
            namespace,
            "GET",
            "/api/profiles?limit=100"
          )
          expect(new Set(listed.body.profiles.map((profile) => profile.namespace))).toEqual(
            new Set(listed.body.profiles.length === 0 ? [] : [namespace])
          )
          const ids = new Set(listed.body.profiles.map((profile) => profile.id))
          const jobs = await admin<{ jobs: Array<{ profileId: string }> }>(
            namespace,
            "GET",
            "/api/jobs?status=pending&limit=100"
          )
          for (const job of jobs.body.jobs) expect(ids.has(job.profileId)).toBe(true)
          for (const user of USERS) {
            const exported = await admin(namespace, "GET", `/api/profiles/${user}/export`)
            expect(leaks(exported.text, namespace)).toBe(false)
            const found = await admin(namespace, "POST", `/api/profiles/${user}/memories/search`, {
              query: `${other(namespace)}mark keeps in mind`
            })
            expect(leaks(found.text, namespace)).toBe(false)
          }
        }
      }),
      { numRuns: 25 }
    )
  }, 120_000)
})
