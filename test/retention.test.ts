import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  answerNamingQuestion,
  eventually,
  type FakeUpstream,
  type RecordedRequest,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/** Each namespace's retention (`namespace_settings.retention`), swept by `RetentionSweep`. */

const ADMIN = "sk-admin-retention-0123456789"
const admin = { authorization: `Bearer ${ADMIN}` }

interface WebhookEvent {
  readonly type: string
  readonly namespace: string
  readonly data: { readonly memory?: { readonly id: string; readonly expiresAt: string | null } }
}

let up: FakeUpstream
let receiver: FakeUpstream
let gw: TestGateway
beforeAll(async () => {
  up = await startFakeUpstream()
  up.handler = answerNamingQuestion
  receiver = await startFakeUpstream()
  receiver.handler = () => ({ kind: "json", status: 200, body: { ok: true } })
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-retention",
    ADMIN_API_KEY: ADMIN,
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    RETENTION_SWEEP_MS: "200"
  })
})
afterAll(async () => {
  await gw.close()
  await receiver.close()
  await up.close()
})

/** The admin key acting in `namespace`. */
const api = <T>(method: string, path: string, namespace: string, json?: unknown) =>
  gw.request<T>(method, path, {
    headers: { ...admin, "x-service-namespace": namespace },
    ...(json === undefined ? {} : { json })
  })

const remember = async (namespace: string, user: string, memory: Record<string, unknown>) => {
  const created = await api<{ memory: { id: string } }>("POST", `/api/profiles/${user}/memories`, namespace, memory)
  expect(created.status).toBe(201)
  return created.body.memory.id
}

const removedCounter = async (kind: string) => {
  const scraped = await gw.request<string>("GET", "/metrics", { headers: admin })
  const line = scraped.text.split("\n").find((l) => l.startsWith(`gateway_retention_removed_total{kind="${kind}"}`))
  return Number(line?.split(" ").at(-1))
}

const lastSweep = async (namespace: string) =>
  (
    await gw.query<{ last_sweep: Record<string, unknown> | null }>(
      "SELECT last_sweep FROM namespace_settings WHERE namespace = $1",
      [namespace]
    )
  )[0]?.last_sweep

const existing = async (table: string, ids: ReadonlyArray<string>, column = "id") =>
  (await gw.query<{ id: string }>(`SELECT ${column}::text AS id FROM ${table} WHERE ${column}::text = ANY($1)`, [ids]))
    .map((row) => row.id)
    .sort()

describe("expired memories", () => {
  it("go within a sweep, in every namespace, as memory.expired, with their vectors; the rest stay", async () => {
    expect(await removedCounter("memories")).toBe(0)
    // `default` has settings but no policy (a caller sets an expiry); `policy` expires facts after 30 days.
    await gw.query(
      `INSERT INTO namespace_settings (namespace, retention) VALUES
         ('default', '{}'), ('policy', '{"memoryDays": {"fact": 30}}')`
    )
    for (const namespace of ["default", "policy"]) {
      const subscribed = await api("POST", "/api/webhooks", namespace, {
        url: `${receiver.url}/hooks`,
        events: ["memory.expired", "memory.deleted"]
      })
      expect(subscribed.status).toBe(201)
      expect((await api("POST", "/api/profiles", namespace, { externalId: "kept-user" })).status).toBe(201)
    }
    const berlin = await remember("default", "kept-user", { content: "Lives in Berlin", type: "fact" })
    const tokyo = await remember("default", "kept-user", {
      content: "Is in Tokyo this week",
      type: "context",
      supersedes: [berlin]
    })
    const tea = await remember("default", "kept-user", { content: "Drinks green tea", type: "preference" })
    const dog = await remember("default", "kept-user", { content: "Has a dog", type: "fact" })
    await gw.query(`UPDATE memories SET expires_at = now() + interval '1 day', expiry_explicit = true WHERE id = $1`, [
      dog
    ])
    // The policy's namespace: a fact ten days old (it has twenty to go), a preference forty days old (no policy).
    const inserted = async (content: string, type: string, days: number) =>
      (
        await gw.query<{ id: string; expires_at: Date | null }>(
          `INSERT INTO memories (profile_id, content, type, created_at)
           SELECT id, $1, $2, now() - $3 * interval '1 day' FROM profiles
           WHERE namespace = 'policy' AND external_id = 'kept-user'
           RETURNING id, expires_at`,
          [content, type, days]
        )
      )[0]!
    const recentFact = await inserted("Plays chess", "fact", 10)
    expect(recentFact.expires_at).not.toBeNull()
    const oldPreference = await inserted("Prefers mornings", "preference", 40)
    expect(oldPreference.expires_at).toBeNull()
    for (const memory of [tokyo, tea])
      await gw.query(
        `INSERT INTO memory_vectors (memory_id, profile_id, model, dimensions, content_hash, scale, vector)
         SELECT id, profile_id, 'test', 2, 'h', 1, '\\x0102'::bytea FROM memories WHERE id = $1`,
        [memory]
      )

    // In one statement, so one sweep finds both: Tokyo's expiry set by a caller, and a fact forty days old.
    const [oldFact] = await gw.query<{ id: string }>(
      `WITH explicit AS (
         UPDATE memories SET expires_at = now() - interval '1 second', expiry_explicit = true WHERE id = $1)
       INSERT INTO memories (profile_id, content, type, created_at)
       SELECT id, 'Worked in Lisbon', 'fact', now() - interval '40 days' FROM profiles
       WHERE namespace = 'policy' AND external_id = 'kept-user'
       RETURNING id`,
      [tokyo]
    )
    const expired = [tokyo, oldFact!.id].sort()
    // The sweep counts what it removed once it has noted it: then the pass is over.
    await eventually(
      async () =>
        (await existing("memories", expired)).length === 0 && (await removedCounter("memories")) === 2
          ? true
          : undefined,
      10_000
    )

    // The sweep that removed them saw the others, and kept them; the memory Tokyo superseded is current again.
    expect(await existing("memories", [berlin, tea, dog, recentFact.id, oldPreference.id])).toEqual(
      [berlin, tea, dog, recentFact.id, oldPreference.id].sort()
    )
    const [current] = await gw.query<{ superseded_by: string | null }>(
      "SELECT superseded_by FROM memories WHERE id = $1",
      [berlin]
    )
    expect(current?.superseded_by).toBeNull()
    expect(await existing("memory_vectors", [tokyo, tea], "memory_id")).toEqual([tea])

    // Each went as `memory.expired`, once; nothing as `memory.deleted`.
    const queued = await gw.query<{ type: string; memory: string }>(
      `SELECT input ->> 'type' AS type, input -> 'data' -> 'memory' ->> 'id' AS memory
       FROM extraction_jobs WHERE kind = 'webhook'`
    )
    expect([...queued].sort((a, b) => a.memory.localeCompare(b.memory))).toEqual(
      expired.map((memory) => ({ type: "memory.expired", memory }))
    )
    const delivered = await eventually(async () => {
      const events = receiver.requests.map((request: RecordedRequest) => JSON.parse(request.rawBody) as WebhookEvent)
      return events.length >= 2 ? events : undefined
    }, 10_000)
    expect(delivered.map((event) => [event.type, event.namespace, event.data.memory?.id]).sort()).toEqual(
      [
        ["memory.expired", "default", tokyo],
        ["memory.expired", "policy", oldFact!.id]
      ].sort()
    )
    expect(delivered.every((event) => event.data.memory?.expiresAt !== null)).toBe(true)

    // Noted per namespace, counted.
    for (const namespace of ["default", "policy"])
      expect(await lastSweep(namespace)).toMatchObject({ memories: 1, turns: 0, responses: 0 })
    expect(await removedCounter("memories")).toBe(2)
  })
})

describe("a namespace's turnsDays", () => {
  it("removes its turns, thread turns and stored Responses state past it, and keeps the rest", async () => {
    const key = await gw.request<{ key: string }>("POST", "/api/keys", {
      headers: admin,
      json: { namespace: "brief", scope: "app" }
    })
    expect(key.status).toBe(201)
    const turn = (authorization: Record<string, string>, user: string, thread: string | undefined, text: string) =>
      gw.request("POST", "/v1/chat/completions", {
        headers: {
          ...authorization,
          "x-service-id": user,
          ...(thread === undefined ? {} : { "x-service-thread-id": thread })
        },
        json: { model: "gpt-test", messages: [{ role: "user", content: text }] }
      })
    const brief = { authorization: `Bearer ${key.body.key}` }
    for (const [thread, text] of [
      ["old", "In the old thread."],
      ["recent", "In the recent thread."],
      [undefined, "Outside a thread."]
    ] as const)
      expect((await turn(brief, "carol", thread, text)).status).toBe(200)
    expect((await turn({}, "dave", undefined, "In the default namespace.")).status).toBe(200)
    const learned = await remember("brief", "carol", { content: "Collects stamps", type: "fact" })

    // What the turns left: summaries, stored responses, conversations, an attachment.
    const profileOf = (namespace: string, user: string) =>
      `(SELECT id FROM profiles WHERE namespace = '${namespace}' AND external_id = '${user}')`
    const carol = profileOf("brief", "carol")
    const dave = profileOf("default", "dave")
    await gw.query(
      `INSERT INTO thread_summaries (profile_id, thread_id, summary, summarized_until)
       SELECT ${carol}, thread, 'A summary.', now() FROM unnest(ARRAY['old', 'recent']) AS thread`
    )
    await gw.query(
      `INSERT INTO stored_responses (id, profile_id, input_items, response, created_at) VALUES
         ('resp_old', ${carol}, '[]', '{}', now() - interval '40 days'),
         ('resp_new', ${carol}, '[]', '{}', now() - interval '10 days'),
         ('resp_other', ${dave}, '[]', '{}', now() - interval '40 days')`
    )
    await gw.query(
      `INSERT INTO conversations (id, profile_id, created_at, size_bytes) VALUES
         ('conv_kept', ${carol}, now() - interval '40 days', 0),
         ('conv_gone', ${carol}, now() - interval '40 days', 0),
         ('conv_other', ${dave}, now() - interval '40 days', 0)`
    )
    await gw.query(
      `INSERT INTO conversation_items (conversation_id, id, item, created_at) VALUES
         ('conv_kept', 'item_old', '{"role": "user", "content": "old"}', now() - interval '40 days'),
         ('conv_kept', 'item_new', '{"role": "user", "content": "new"}', now() - interval '10 days'),
         ('conv_gone', 'item_gone', '{"role": "user", "content": "old"}', now() - interval '40 days'),
         ('conv_other', 'item_other', '{"role": "user", "content": "old"}', now() - interval '40 days')`
    )
    await gw.query(
      `UPDATE conversations c SET size_bytes = (
         SELECT sum(octet_length(i.item::text)) FROM conversation_items i WHERE i.conversation_id = c.id)`
    )
    const ageTurns = (profile: string, thread: string | null, days: number) =>
      gw.query(
        `UPDATE messages SET created_at = now() - $2 * interval '1 day'
         WHERE profile_id = ${profile} AND thread_id IS NOT DISTINCT FROM $1`,
        [thread, days]
      )
    await ageTurns(carol, "old", 40)
    await ageTurns(carol, null, 40)
    await ageTurns(carol, "recent", 10)
    await ageTurns(dave, null, 40)
    await gw.query(
      `INSERT INTO message_attachments (message_id, position, profile_id, kind, bytes, sha256)
       SELECT id, 0, profile_id, 'image', 1, 'digest' FROM messages
       WHERE profile_id = ${carol} AND thread_id = 'old' AND role = 'user'`
    )
    const turnsBefore = await removedCounter("turns")
    const responsesBefore = await removedCounter("responses")

    // The policy comes last, in one statement: the sweep that applies it finds everything above.
    await gw.query(`INSERT INTO namespace_settings (namespace, retention) VALUES ('brief', '{"turnsDays": 30}')`)
    const turnsOf = (profile: string) =>
      gw.query<{ thread: string | null }>(
        `SELECT DISTINCT thread_id AS thread FROM messages WHERE profile_id = ${profile} ORDER BY thread_id`
      )
    // The sweep counts what it removed once it has noted it: then the pass is over.
    await eventually(
      async () =>
        (await turnsOf(carol)).length === 1 && (await removedCounter("responses")) > responsesBefore ? true : undefined,
      10_000
    )
    expect(await turnsOf(carol)).toEqual([{ thread: "recent" }])
    expect(await turnsOf(dave)).toEqual([{ thread: null }])
    expect(await gw.query("SELECT 1 FROM message_attachments")).toEqual([])
    expect(
      (await gw.query<{ thread_id: string }>("SELECT thread_id FROM thread_summaries")).map((row) => row.thread_id)
    ).toEqual(["recent"])
    expect(await existing("stored_responses", ["resp_old", "resp_new", "resp_other"])).toEqual([
      "resp_new",
      "resp_other"
    ])
    expect(
      await gw.query(
        "SELECT c.id, i.id AS item, c.size_bytes::int AS size FROM conversations c LEFT JOIN conversation_items i ON i.conversation_id = c.id ORDER BY c.id"
      )
    ).toEqual([
      { id: "conv_kept", item: "item_new", size: '{"role": "user", "content": "new"}'.length },
      { id: "conv_other", item: "item_other", size: '{"role": "user", "content": "old"}'.length }
    ])
    // What was learned from the turns stays.
    expect(await existing("memories", [learned])).toEqual([learned])

    // Two turns of two messages each; a stored response and two conversation items.
    expect(await lastSweep("brief")).toMatchObject({ memories: 0, turns: 4, responses: 3 })
    expect(await removedCounter("turns")).toBe(turnsBefore + 4)
    expect(await removedCounter("responses")).toBe(responsesBefore + 3)
  })
})

describe("an expired memory the sweep has not removed yet", () => {
  it("is not injected", async () => {
    // The default sweep interval: the sweep at start has run, the next is a quarter of an hour away.
    const idle = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-retention" })
    try {
      await idle.request("POST", "/api/profiles", { json: { externalId: "erin" } })
      const memory = async (content: string) =>
        (
          await idle.request<{ memory: { id: string } }>("POST", "/api/profiles/erin/memories", {
            json: { content, type: "fact" }
          })
        ).body.memory.id
      const kept = await memory("Erin is allergic to peanuts")
      const expiring = await memory("Erin is allergic to shellfish")
      await idle.query(
        `UPDATE memories SET expires_at = now() + interval '300 milliseconds', expiry_explicit = true WHERE id = $1`,
        [expiring]
      )
      await eventually(async () => {
        const [row] = await idle.query<{ past: boolean }>(
          "SELECT expires_at <= now() AS past FROM memories WHERE id = $1",
          [expiring]
        )
        return row?.past === true ? true : undefined
      })
      const preview = await idle.request<{ receipt: { memories: Array<string> } | null }>(
        "POST",
        "/api/profiles/erin/preview",
        { json: { message: "Is Erin allergic to anything?" } }
      )
      expect(preview.status).toBe(200)
      expect(preview.body.receipt?.memories).toEqual([kept])
      // Still there: left out by the read, not by a sweep.
      expect(await idle.query("SELECT 1 FROM memories WHERE id = $1", [expiring])).toHaveLength(1)
    } finally {
      await idle.close()
    }
  })
})

describe("images and files no job will read", () => {
  it("are let go of an hour after their turn, their digest kept; those a pending job will read are held", async () => {
    const [profile] = await gw.query<{ id: string }>(
      "INSERT INTO profiles (namespace, external_id) VALUES ('default', 'stranded-owner') RETURNING id::text AS id"
    )
    const [stranded, waiting] = await gw.query<{ id: string }>(
      `INSERT INTO messages (profile_id, role, content, created_at)
       VALUES ($1, 'user', '[image_url]', now() - interval '2 hours'), ($1, 'user', '[image_url]', now() - interval '2 hours')
       RETURNING id::text AS id`,
      [profile!.id]
    )
    await gw.query(`INSERT INTO extraction_jobs (profile_id, kind, message_ids) VALUES ($1, 'turn', ARRAY[$2::uuid])`, [
      profile!.id,
      waiting!.id
    ])
    // Both held at once (one statement), two hours old: one sweep sees both.
    await gw.query(
      `INSERT INTO message_attachments (message_id, position, profile_id, kind, media_type, data, bytes, sha256, created_at)
       SELECT id, 0, $1, 'image', 'image/png', '\\x89504e47'::bytea, 4, 'digest', now() - interval '2 hours'
       FROM messages WHERE id = ANY ($2::uuid[])`,
      [profile!.id, [stranded!.id, waiting!.id]]
    )
    const heldOf = async (messageId: string) =>
      (
        await gw.query<{ held: boolean; sha256: string }>(
          "SELECT data IS NOT NULL AS held, sha256 FROM message_attachments WHERE message_id = $1",
          [messageId]
        )
      )[0]
    expect(await eventually(async () => ((await heldOf(stranded!.id))?.held === false ? true : undefined))).toBe(true)
    expect(await heldOf(stranded!.id)).toEqual({ held: false, sha256: "digest" })
    // The same sweep passed the one a pending job will read by.
    expect(await heldOf(waiting!.id)).toEqual({ held: true, sha256: "digest" })
  })
})
