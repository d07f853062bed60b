import { readFileSync } from "node:fs"
import { createAnthropic } from "@ai-sdk/anthropic"
import { createOpenAI } from "@ai-sdk/openai"
import Anthropic from "@anthropic-ai/sdk"
import { ChatOpenAI } from "@langchain/openai"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { generateText } from "ai"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicMessage } from "./support/anthropicWire.ts"
import { completion, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/**
 * The README's table "Which base URL each client needs", read from the README itself: each client in it
 * is run with exactly the base URL the table gives (the table's host swapped for the test gateway's),
 * and must get memory. A row whose URL is wrong for its client fails here.
 */
const README_HOST = "http://localhost:3100"
const table = (() => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
  const section = readme.split("**Which base URL each client needs**")[1]!.split("\n\n")[1]!
  return new Map(
    section
      .split("\n")
      .slice(2)
      .map((line) => line.split("|").map((cell) => cell.trim()))
      .map(([, client, url]) => [client!, url!.match(/`([^`]+)`/)![1]!] as const)
  )
})()

const baseUrlFor = (clientCell: string, gatewayUrl: string) => {
  const row = [...table.keys()].find((client) => client.includes(clientCell))
  expect(row, `the README's table has a row for ${clientCell}`).toBeDefined()
  const url = table.get(row!)!
  expect(url.startsWith(README_HOST)).toBe(true)
  return gatewayUrl + url.slice(README_HOST.length)
}

const APP_KEY = "sk-app-base-urls"
const USER = "base-url-user"

let gw: TestGateway
let openai: FakeUpstream
let anthropic: FakeUpstream
beforeAll(async () => {
  openai = await startFakeUpstream()
  anthropic = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: openai.url,
    ANTHROPIC_BASE_URL: anthropic.url,
    UPSTREAM_API_KEY: "sk-openai-test",
    ANTHROPIC_API_KEY: "sk-ant-test",
    SERVICE_API_KEY: APP_KEY
  })
  const admin = { authorization: `Bearer ${APP_KEY}` }
  await gw.request("POST", "/api/profiles", { json: { externalId: USER }, headers: admin })
  const trait = await gw.request("PUT", `/api/profiles/${USER}/traits/name`, {
    json: { value: "Zélie" },
    headers: admin
  })
  expect(trait.status).toBe(200)
})
afterAll(async () => {
  await gw.close()
  await openai.close()
  await anthropic.close()
})
beforeEach(() => {
  openai.reset()
  anthropic.reset()
})

const headers = { "X-Service-Id": USER }
/** What the provider received carries the user's profile: memory was injected. */
const injected = (upstream: FakeUpstream) => {
  expect(upstream.requests).toHaveLength(1)
  expect(JSON.stringify(upstream.requests[0]!.body)).toContain("Zélie")
}

describe("the README's base URL for each client", () => {
  it("covers the clients it names", () => {
    expect(table.size).toBe(4)
  })

  it("openai", async () => {
    const client = new OpenAI({ baseURL: baseUrlFor("`openai`", gw.baseUrl), apiKey: APP_KEY, maxRetries: 0 })
    await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }, { headers })
    injected(openai)
  })

  it("LangChain's ChatOpenAI", async () => {
    const chat = new ChatOpenAI({
      model: "m",
      apiKey: APP_KEY,
      maxRetries: 0,
      configuration: { baseURL: baseUrlFor("ChatOpenAI", gw.baseUrl), defaultHeaders: headers }
    })
    openai.enqueue({ kind: "json", status: 200, body: completion({ content: "Hello from LangChain" }) })
    expect((await chat.invoke("hi")).content).toBe("Hello from LangChain")
    injected(openai)
  })

  it("Vercel AI SDK @ai-sdk/openai", async () => {
    const provider = createOpenAI({ baseURL: baseUrlFor("@ai-sdk/openai", gw.baseUrl), apiKey: APP_KEY, headers })
    openai.enqueue({ kind: "json", status: 200, body: completion({ content: "Hello from the AI SDK" }) })
    const { text } = await generateText({ model: provider.chat("m"), prompt: "hi", maxRetries: 0 })
    expect(text).toBe("Hello from the AI SDK")
    injected(openai)
  })

  it("@anthropic-ai/sdk", async () => {
    const client = new Anthropic({
      baseURL: baseUrlFor("@anthropic-ai/sdk", gw.baseUrl),
      apiKey: APP_KEY,
      maxRetries: 0
    })
    anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "Hello" }]) })
    await client.messages.create(
      { model: "claude-test", max_tokens: 10, messages: [{ role: "user", content: "hi" }] },
      { headers }
    )
    injected(anthropic)
  })

  it("Vercel AI SDK @ai-sdk/anthropic", async () => {
    const provider = createAnthropic({ baseURL: baseUrlFor("@ai-sdk/anthropic", gw.baseUrl), apiKey: APP_KEY, headers })
    anthropic.enqueue({
      kind: "json",
      status: 200,
      body: anthropicMessage([{ type: "text", text: "Hello from Claude" }])
    })
    const { text } = await generateText({
      model: provider("claude-test"),
      prompt: "hi",
      maxOutputTokens: 100,
      maxRetries: 0
    })
    expect(text).toBe("Hello from Claude")
    injected(anthropic)
  })

  it("MCP clients", async () => {
    const client = new Client({ name: "base-url-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(baseUrlFor("MCP clients", gw.baseUrl)), {
        requestInit: { headers: { authorization: `Bearer ${APP_KEY}`, ...headers } }
      })
    )
    try {
      const { tools } = await client.listTools()
      expect(tools.length).toBeGreaterThan(0)
    } finally {
      await client.close()
    }
  })
})
