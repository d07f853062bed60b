import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/** The MCP server at /mcp, through the official TypeScript SDK's client (what agent tools use). */

const APP_KEY = "sk-app-mcp"
const ADMIN_KEY = "sk-admin-mcp"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ SERVICE_API_KEY: APP_KEY, ADMIN_API_KEY: ADMIN_KEY })
})
afterAll(() => gw.close())

const admin = { authorization: `Bearer ${ADMIN_KEY}` }

/** A client connected as the given user, with the app key. */
const connect = async (userId: string | undefined, key = APP_KEY) => {
  const client = new Client({ name: "gateway-test", version: "1.0.0" })
  const headers: Record<string, string> = { authorization: `Bearer ${key}` }
  if (userId !== undefined) headers["x-service-id"] = userId
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.baseUrl}/mcp`), { requestInit: { headers } }))
  return client
}

/** A tool's structured result, or its error text. */
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
  const result = await client.callTool({ name, arguments: args })
  const text = (result.content as Array<{ type: string; text: string }>).map((part) => part.text).join("")
  return { isError: result.isError === true, value: result.isError === true ? undefined : JSON.parse(text), text }
}

describe("the MCP server", () => {
  it("lists its tools and resources", async () => {
    const client = await connect("mcp-lister")
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "add_memory",
      "delete_memory",
      "get_profile",
      "search_memories",
      "set_trait",
      "update_memory"
    ])
    const search = tools.find((tool) => tool.name === "search_memories")!
    expect(search.inputSchema).toMatchObject({ type: "object", required: ["query"] })
    // No tool lets a caller pick the profile: the connection names it.
    for (const tool of tools) expect(Object.keys(tool.inputSchema.properties ?? {})).not.toContain("profile")
    const { resources } = await client.listResources()
    expect(resources.map((resource) => resource.uri).sort()).toEqual(["profile://summary", "profile://traits"])
    await client.close()
  })

  it("adds, searches, updates and deletes the connection's memories, as the API sees them", async () => {
    const client = await connect("mcp-memories")
    const added = await call(client, "add_memory", {
      content: "Allergic to peanuts",
      type: "fact",
      importance: 0.9,
      cues: ["snacks"]
    })
    expect(added.value.memory).toMatchObject({
      content: "Allergic to peanuts",
      type: "fact",
      importance: 0.9,
      cues: ["snacks"]
    })
    const id = added.value.memory.id as string
    await call(client, "add_memory", { content: "Plays the cello", type: "fact" })

    const found = await call(client, "search_memories", { query: "Which snacks are safe with my peanut allergy?" })
    expect(found.value.memories[0]).toMatchObject({ id, content: "Allergic to peanuts" })
    // Times as ISO 8601, as the management API writes them.
    expect(found.value.memories[0].createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)

    const updated = await call(client, "update_memory", { id, content: "Severely allergic to peanuts", importance: 1 })
    expect(updated.value.memory).toMatchObject({ id, content: "Severely allergic to peanuts", importance: 1 })
    expect((await call(client, "delete_memory", { id })).value).toEqual({ deleted: true })

    const listed = await gw.request<{ memories: Array<{ content: string }> }>(
      "GET",
      "/api/profiles/mcp-memories/memories",
      { headers: admin }
    )
    expect(listed.body.memories.map((memory) => memory.content)).toEqual(["Plays the cello"])
    await client.close()
  })

  it("keeps the tags and metadata add_memory and update_memory are given, checked as the API checks them", async () => {
    const client = await connect("mcp-tags")
    // An agent sees them among the tools' parameters.
    for (const tool of (await client.listTools()).tools.filter(
      (t) => t.name.endsWith("_memory") && t.name !== "delete_memory"
    ))
      expect(Object.keys(tool.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["tags", "metadata"]))
    const added = await call(client, "add_memory", {
      content: "Prefers morning meetings",
      type: "preference",
      tags: ["work", "calendar"],
      metadata: { project: "apollo", priority: 2, shared: false }
    })
    expect(added.value.memory).toMatchObject({
      tags: ["work", "calendar"],
      metadata: { project: "apollo", priority: 2, shared: false }
    })
    const id = added.value.memory.id as string
    await call(client, "add_memory", { content: "Prefers tea in the morning", type: "preference", tags: ["home"] })
    const listed = async () =>
      (
        await gw.request<{ memories: Array<{ id: string; tags: Array<string>; metadata: Record<string, unknown> }> }>(
          "GET",
          "/api/profiles/mcp-tags/memories",
          { headers: admin }
        )
      ).body.memories.find((memory) => memory.id === id)
    expect(await listed()).toMatchObject({ tags: ["work", "calendar"], metadata: { project: "apollo" } })
    // A filter on them finds it, as injection would.
    const work = await call(client, "search_memories", {
      query: "When do I like meetings in the morning?",
      filter: { tags: { any: ["work"] }, metadata: { project: "apollo" } }
    })
    expect(work.value.memories.map((memory: { id: string }) => memory.id)).toEqual([id])

    // Changing only the tags or only the metadata is a change; each replaces the old as a whole.
    const retagged = await call(client, "update_memory", { id, tags: ["personal"] })
    expect(retagged.value.memory).toMatchObject({ tags: ["personal"], metadata: { project: "apollo", priority: 2 } })
    const remarked = await call(client, "update_memory", { id, metadata: { project: "zeus" } })
    expect(remarked.value.memory).toMatchObject({ tags: ["personal"], metadata: { project: "zeus" } })
    expect(await listed()).toMatchObject({ tags: ["personal"], metadata: { project: "zeus" } })

    const before = await gw.counts()
    const tooManyKeys = Object.fromEntries(Array.from({ length: 21 }, (_, index) => [`k${index}`, index]))
    for (const [tool, args] of [
      ["add_memory", { content: "x", type: "fact", tags: ["not a tag!"] }],
      ["add_memory", { content: "x", type: "fact", tags: Array.from({ length: 21 }, (_, index) => `t${index}`) }],
      ["add_memory", { content: "x", type: "fact", metadata: { nested: { no: true } } }],
      ["add_memory", { content: "x", type: "fact", metadata: tooManyKeys }],
      ["update_memory", { id, tags: ["not a tag!"] }],
      ["update_memory", { id, metadata: { note: "x".repeat(257) } }]
    ] as const) {
      const result = await call(client, tool, args)
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/tags|metadata/)
    }
    expect(await gw.counts()).toEqual(before)
    expect(await listed()).toMatchObject({ tags: ["personal"], metadata: { project: "zeus" } })
    await client.close()
  })

  it("reads the profile and sets traits by hand, refusing values the trait's type does not allow", async () => {
    const client = await connect("mcp-traits")
    // The connection's first call creates the profile, as a first request on /v1 does.
    const set = await call(client, "set_trait", { key: "expertise_level", value: "expert" })
    expect(set.value.trait).toMatchObject({ key: "expertise_level", value: "expert", source: "manual", confidence: 1 })
    const patched = await gw.request("PATCH", "/api/profiles/mcp-traits", {
      json: { summary: "A cellist from Porto." },
      headers: admin
    })
    expect(patched.status).toBe(200)
    const refused = await call(client, "set_trait", { key: "expertise_level", value: "wizard" })
    expect(refused.isError).toBe(true)
    expect(refused.text).toMatch(/^invalid_trait_value: /)

    const profile = await call(client, "get_profile")
    expect(profile.value).toMatchObject({
      externalId: "mcp-traits",
      summary: "A cellist from Porto.",
      traits: [{ key: "expertise_level", value: "expert", valueType: "enum", source: "manual" }]
    })
    const summary = await client.readResource({ uri: "profile://summary" })
    expect(summary.contents).toMatchObject([{ uri: "profile://summary", text: "A cellist from Porto." }])
    const traits = await client.readResource({ uri: "profile://traits" })
    expect(JSON.parse((traits.contents[0] as { text: string }).text)).toMatchObject([
      { key: "expertise_level", value: "expert" }
    ])
    await client.close()
  })

  it("never reaches another profile: a memory of another user is not found, and nothing of theirs changes", async () => {
    const owner = await connect("mcp-owner")
    const secret = await call(owner, "add_memory", { content: "Owner's private note", type: "context" })
    const id = secret.value.memory.id as string
    const intruder = await connect("mcp-intruder")
    for (const [tool, args] of [
      ["update_memory", { id, content: "changed" }],
      ["delete_memory", { id }]
    ] as const) {
      const result = await call(intruder, tool, args)
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/^memory_not_found: /)
    }
    const search = await call(intruder, "search_memories", { query: "Owner's private note" })
    expect(search.value.memories).toEqual([])
    const owners = await gw.request<{ memories: Array<{ content: string }> }>(
      "GET",
      "/api/profiles/mcp-owner/memories",
      { headers: admin }
    )
    expect(owners.body.memories.map((memory) => memory.content)).toEqual(["Owner's private note"])
    await owner.close()
    await intruder.close()
  })

  it("refuses a connection without a user, with a bad user id, or without the app key", async () => {
    const anonymous = await connect(undefined)
    await expect(anonymous.callTool({ name: "get_profile", arguments: {} })).rejects.toThrow(/missing_user_id/)
    await anonymous.close()
    const tooLong = await connect("x".repeat(300))
    await expect(tooLong.callTool({ name: "get_profile", arguments: {} })).rejects.toThrow(/invalid_user_id/)
    await tooLong.close()
    const before = await gw.counts()
    await expect(connect("mcp-keyless", "sk-wrong")).rejects.toThrow()
    // The admin key does not admit /mcp either: it would hold every profile.
    await expect(connect("mcp-admin", ADMIN_KEY)).rejects.toThrow()
    expect(await gw.counts()).toEqual(before)
  })

  it("checks tool arguments as the API checks fields, storing nothing", async () => {
    const client = await connect("mcp-arguments")
    await call(client, "get_profile")
    const before = await gw.counts()
    for (const [tool, args, field] of [
      ["add_memory", { content: "", type: "fact" }, "content"],
      ["add_memory", { content: "x", type: "opinion" }, "type"],
      ["add_memory", { content: "x", type: "fact", importance: 2 }, "importance"],
      ["set_trait", { key: "not a key!", value: 1 }, "key"]
    ] as const) {
      const result = await call(client, tool, args)
      expect(result.isError).toBe(true)
      expect(result.text).toContain(field)
    }
    const nothing = await call(client, "update_memory", { id: "00000000-0000-0000-0000-000000000000" })
    expect(nothing.text).toMatch(/^invalid_request_body: /)
    expect(await gw.counts()).toEqual(before)
    await client.close()
  })
})

describe("the MCP server behind a load balancer", () => {
  it("answers a session another replica started with 404 and a JSON-RPC error, and a new session there works", async () => {
    const other = await startGateway(
      { SERVICE_API_KEY: APP_KEY, ADMIN_API_KEY: ADMIN_KEY },
      { databaseUrl: gw.databaseUrl }
    )
    try {
      const headers = { authorization: `Bearer ${APP_KEY}`, "x-service-id": "mcp-balanced" }
      // A balancer without affinity: the session starts on one replica, its next request reaches the other.
      let target = gw.baseUrl
      const balanced = (url: string | URL, init?: RequestInit) => fetch(String(url).replace(gw.baseUrl, target), init)
      const client = new Client({ name: "gateway-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(`${gw.baseUrl}/mcp`), {
        requestInit: { headers },
        fetch: balanced
      })
      await client.connect(transport)
      target = other.baseUrl
      // The official SDK raises the 404 with the body: the app knows to connect again.
      await expect(client.listTools()).rejects.toMatchObject({
        code: 404,
        message: expect.stringContaining("Session not found")
      })

      const response = await balanced(`${gw.baseUrl}/mcp`, {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": transport.sessionId!,
          "mcp-protocol-version": transport.protocolVersion ?? "2025-11-25"
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" })
      })
      expect(response.status).toBe(404)
      expect(await response.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32001 } })

      // As the specification asks of a client that gets 404, it starts a new session: that one works.
      const fresh = new Client({ name: "gateway-test", version: "1.0.0" })
      await fresh.connect(
        new StreamableHTTPClientTransport(new URL(`${gw.baseUrl}/mcp`), { requestInit: { headers }, fetch: balanced })
      )
      expect((await fresh.listTools()).tools.length).toBeGreaterThan(0)
      await fresh.close()
      await client.close()
    } finally {
      await other.close()
    }
  })
})
