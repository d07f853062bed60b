import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Schema } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { definePlugin, PluginRejection, schemaValueType, type TurnContext } from "../src/plugins/Plugin.ts"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError } from "./support/wire.ts"

let up: FakeUpstream
let dir: string
beforeAll(async () => {
  up = await startFakeUpstream()
  dir = await mkdtemp(join(tmpdir(), "gateway-plugins-"))
})
afterAll(async () => {
  await up.close()
  await rm(dir, { recursive: true, force: true })
})

const trace = (name: string) =>
  definePlugin({
    name,
    hooks: {
      beforeForward: ({ body }) =>
        Effect.succeed({ ...body, x_trace: [...((body["x_trace"] as Array<string> | undefined) ?? []), name] }),
      inject: () =>
        Effect.succeed([{ title: `From ${name}`, items: [{ id: name, text: `${name} says hi` }], priority: 50 }])
    }
  })

const observed: Array<TurnContext> = []

const plugins = [
  trace("first"),
  trace("second"),
  definePlugin({
    name: "slow",
    // Never answers: only PLUGIN_TIMEOUT_MS ends its hook.
    hooks: {
      inject: () =>
        Effect.never.pipe(Effect.as([{ title: "Slow", items: [{ id: "s", text: "too late" }], priority: 999 }]))
    }
  }),
  definePlugin({
    name: "broken",
    hooks: {
      inject: () => Effect.sync(() => JSON.parse("{not json") as never),
      beforeForward: () => Effect.fail("nope")
    }
  }),
  definePlugin({
    name: "header-user",
    hooks: {
      resolveUser: ({ headers, userId }) =>
        Effect.gen(function* () {
          if (headers["x-banned"] !== undefined) {
            return yield* new PluginRejection({ status: 403, code: "user_banned", message: "This user may not chat" })
          }
          return userId ?? headers["x-legacy-user"]
        })
    }
  }),
  definePlugin({
    name: "observer",
    hooks: { afterResponse: (turn) => Effect.sync(() => void observed.push(turn)) }
  }),
  definePlugin({
    name: "percentages",
    valueTypes: [
      schemaValueType("percentage", Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 100 })), (v) => `${v}%`)
    ]
  })
]

describe("the plugin host", () => {
  let gw: TestGateway
  beforeAll(async () => {
    const traits = join(dir, "traits.json")
    await writeFile(
      traits,
      JSON.stringify({ completion: { type: "percentage", injection: { template: "Course progress: {{value}}" } } })
    )
    gw = await startGateway(
      { UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test", PLUGIN_TIMEOUT_MS: "50", TRAITS_FILE: traits },
      { plugins }
    )
  })
  afterAll(() => gw.close())

  const chat = (headers: Record<string, string> = { "x-service-id": "plugged" }) =>
    gw.request("POST", "/v1/chat/completions", {
      json: { model: "m", messages: [{ role: "user", content: "hi" }] },
      headers
    })

  it("runs hooks in declaration order and skips failing and late ones", async () => {
    up.reset()
    const res = await chat()
    expect(res.status).toBe(200)
    const sent = up.requests[0]!.body!
    expect(sent["x_trace"]).toEqual(["first", "second"])
    const system = injectedText(sent)
    expect(system.indexOf("first says hi")).toBeLessThan(system.indexOf("second says hi"))
    expect(system).not.toContain("too late")
    expect(JSON.parse(res.headers.get("x-service-context")!)).toMatchObject({ plugins: ["first", "second"] })

    const stats = await gw.request<{
      plugins: Array<{ name: string; calls: number; failures: number; timeouts: number; hooks: Array<string> }>
    }>("GET", "/api/plugins")
    const byName = Object.fromEntries(stats.body.plugins.map((p) => [p.name, p]))
    expect(stats.body.plugins.map((p) => p.name)).toEqual(["core", ...plugins.map((p) => p.name)])
    expect(byName["slow"]).toMatchObject({ timeouts: 1, failures: 0 })
    expect(byName["broken"]).toMatchObject({ failures: 2, timeouts: 0 })
    expect(byName["first"]!.hooks.sort()).toEqual(["beforeForward", "inject"])
  })

  it("lets a plugin supply the user id, or refuse the request with its own status and code", async () => {
    up.reset()
    expect((await chat({ "x-legacy-user": "from-plugin" })).status).toBe(200)
    expect((await gw.request("GET", "/api/profiles/from-plugin")).status).toBe(200)
    expectError(await chat({ "x-service-id": "someone", "x-banned": "1" }), 403, "user_banned")
    expect(up.requests).toHaveLength(1)
  })

  it("shows plugins the recorded turn afterwards", async () => {
    await chat({ "x-service-id": "observed" })
    // The hook runs after the answer, in the background (so may a hook of an earlier test's turn):
    // wait for this user's turn.
    const turnsOf = () => observed.filter((turn) => turn.profile.externalId === "observed")
    await eventually(async () => (turnsOf().length > 0 ? true : undefined))
    expect(turnsOf()).toHaveLength(1)
    expect(turnsOf()[0]!.messages.map((m) => m.role)).toEqual(["user", "assistant"])
  })

  it("adds value types that traits can use", async () => {
    up.reset()
    await gw.request("POST", "/api/profiles", { json: { externalId: "learner" } })
    const ok = await gw.request("PUT", "/api/profiles/learner/traits/completion", { json: { value: 40 } })
    expect(ok.body).toMatchObject({ trait: { valueType: "percentage", value: 40 } })
    expectError(
      await gw.request("PUT", "/api/profiles/learner/traits/completion", { json: { value: 140 } }),
      400,
      "invalid_trait_value"
    )
    await chat({ "x-service-id": "learner" })
    expect(JSON.stringify(up.requests[0]!.body)).toContain("Course progress: 40%")
  })
})

describe("a required plugin", () => {
  it("fails the request with 500 plugin_failed naming it, and calls nobody", async () => {
    const gw = await startGateway(
      { UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test" },
      {
        plugins: [
          definePlugin({
            name: "gatekeeper",
            required: true,
            hooks: { beforeForward: () => Effect.die(new Error("database of rules is down")) }
          })
        ]
      }
    )
    try {
      up.reset()
      const res = await gw.request("POST", "/v1/chat/completions", {
        json: { model: "m", messages: [{ role: "user", content: "hi" }] },
        headers: { "x-service-id": "guarded" }
      })
      expect(expectError(res, 500, "plugin_failed")).toContain("gatekeeper")
      expect(up.requests).toHaveLength(0)
    } finally {
      await gw.close()
    }
  })
})

describe("loading plugins from PLUGINS", () => {
  const startFails = async (env: Record<string, string>, options = {}) => {
    const error = await startGateway(env, options).then(
      async (gw) => {
        await gw.close()
        return undefined
      },
      (e: unknown) => String(e)
    )
    expect(error).toBeDefined()
    return error!
  }

  it("loads a folder or a file, in the order given", async () => {
    await writeFile(join(dir, "tagger.mjs"), "export default { name: 'tagger', hooks: {} }\n")
    const gw = await startGateway({ PLUGINS: `./plugins/clock, ${join(dir, "tagger.mjs")}` })
    try {
      const res = await gw.request<{ plugins: Array<{ name: string }> }>("GET", "/api/plugins")
      expect(res.body.plugins.map((p) => p.name)).toEqual(["core", "clock", "tagger"])
    } finally {
      await gw.close()
    }
  })

  it("stops the start with a clear message for a missing or malformed plugin", async () => {
    expect(await startFails({ PLUGINS: "./plugins/nope" })).toMatch(
      /PLUGINS: \.\/plugins\/nope: no such file or folder/
    )
    await writeFile(join(dir, "empty.mjs"), "export const something = 1\n")
    expect(await startFails({ PLUGINS: join(dir, "empty.mjs") })).toContain("exports no plugin")
    await writeFile(join(dir, "syntax.mjs"), "export default {\n")
    expect(await startFails({ PLUGINS: join(dir, "syntax.mjs") })).toContain("cannot be imported")
    expect(await startFails({ PLUGINS: "not-an-installed-package" })).toContain("not-an-installed-package")
    expect(await startFails({}, { plugins: [definePlugin({ name: "Bad Name" })] })).toContain("lower-case")
    expect(
      await startFails({}, { plugins: [definePlugin({ name: "twin" }), definePlugin({ name: "twin" })] })
    ).toContain("twin")
  })

  it("stops the start when the trait schema names a value type or behaviour nobody provides", async () => {
    const traits = join(dir, "unknown-type.json")
    await writeFile(traits, JSON.stringify({ level: { type: "percentage" } }))
    expect(await startFails({ TRAITS_FILE: traits })).toContain("unknown value type 'percentage'")
    await writeFile(traits, JSON.stringify({ level: { type: "string", behaviour: "nps" } }))
    expect(await startFails({ TRAITS_FILE: traits })).toContain("unknown behaviour 'nps'")
  })
})

describe("official SDK and plugin rejections", () => {
  it("surfaces a plugin's status and code", async () => {
    const gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test" }, { plugins })
    try {
      const client = new OpenAI({
        baseURL: `${gw.baseUrl}/v1`,
        apiKey: "x",
        maxRetries: 0,
        defaultHeaders: { "X-Service-Id": "u", "X-Banned": "1" }
      })
      const error = await client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(error).toMatchObject({ status: 403, code: "user_banned" })
    } finally {
      await gw.close()
    }
  })

  it("honours a rejection made by another copy of the plugin API (a plugin built against dist/)", async () => {
    // The same class, defined again: what a plugin importing the built package gets.
    class ForeignRejection extends Schema.TaggedError<ForeignRejection>()("PluginRejection", {
      status: Schema.Int,
      code: Schema.String,
      message: Schema.String
    }) {}
    const gate = definePlugin({
      name: "foreign-gate",
      hooks: {
        beforeForward: ({ body }) =>
          Effect.fail(
            new ForeignRejection({ status: 403, code: "blocked_by_policy", message: "Blocked by policy" })
          ).pipe(Effect.as(body))
      }
    })
    const gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test" }, { plugins: [gate] })
    try {
      const before = up.requests.length
      const client = new OpenAI({
        baseURL: `${gw.baseUrl}/v1`,
        apiKey: "x",
        maxRetries: 0,
        defaultHeaders: { "X-Service-Id": "u" }
      })
      const error = await client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(error).toMatchObject({ status: 403, code: "blocked_by_policy" })
      expect(up.requests.length).toBe(before)
    } finally {
      await gw.close()
    }
  })
})
