import { execFile } from "node:child_process"
import { mkdir, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { promisify } from "node:util"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway } from "./support/gateway.ts"

const run = promisify(execFile)

/**
 * A plugin written as docs/plugins.md shows, against its own build of the package (what a
 * plugin installed with its own copy of the gateway gets), loaded with `PLUGINS` into the gateway
 * running from src/: its `PluginRejection` is another class than the gateway's, and must still block.
 */
describe("a plugin built against a separate copy of the package", () => {
  // Inside node_modules so the build resolves `effect` as an installed package would.
  const packageDir = join(process.cwd(), "node_modules", ".tmp", `plugin-package-${process.pid}`)
  let up: FakeUpstream

  beforeAll(async () => {
    up = await startFakeUpstream()
    await rm(packageDir, { recursive: true, force: true })
    await mkdir(packageDir, { recursive: true })
    // Emitting only: the type check is `npm test`'s own first step.
    await run(process.execPath, [
      join("node_modules", "typescript", "bin", "tsc"),
      "-p",
      "tsconfig.build.json",
      "--outDir",
      join(packageDir, "dist"),
      "--noCheck",
      "--declaration",
      "false",
      "--declarationMap",
      "false",
      "--sourceMap",
      "false"
    ])
    await writeFile(
      join(packageDir, "gate.js"),
      [
        `import { Effect } from "effect"`,
        `import { definePlugin, PluginRejection } from "./dist/index.js"`,
        `export default definePlugin({`,
        `  name: "separately-built-gate",`,
        `  hooks: {`,
        `    beforeForward: ({ userId, body }) =>`,
        `      userId === "mallory"`,
        `        ? Effect.fail(new PluginRejection({ status: 403, code: "blocked_by_policy", message: "Blocked by policy" }))`,
        `        : Effect.succeed(body)`,
        `  }`,
        `})`
      ].join("\n")
    )
  }, 120_000)

  afterAll(async () => {
    await up?.close()
    await rm(packageDir, { recursive: true, force: true })
  })

  it("blocks the user its rejection names, with the plugin's status and code, and lets others through", async () => {
    const gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test",
      PLUGINS: join(packageDir, "gate.js")
    })
    try {
      const client = (user: string) =>
        new OpenAI({
          baseURL: `${gw.baseUrl}/v1`,
          apiKey: "x",
          maxRetries: 0,
          defaultHeaders: { "X-Service-Id": user }
        })
      const error = await client("mallory")
        .chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(error).toMatchObject({ status: 403, code: "blocked_by_policy" })
      expect(up.requests).toHaveLength(0)

      const answer = await client("alice").chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "hi" }]
      })
      expect(answer.choices[0]?.message.content).toBe("answer 0")
      expect(up.requests).toHaveLength(1)
    } finally {
      await gw.close()
    }
  })
})
