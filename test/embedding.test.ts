import { execFile } from "node:child_process"
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { createDatabase } from "./support/gateway.ts"
import { freePort, type ServiceProcess, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

const root = fileURLToPath(new URL("..", import.meta.url))
const run = promisify(execFile)

describe("the embedding example", () => {
  let app: ServiceProcess
  let up: FakeUpstream
  beforeAll(async () => {
    up = await startFakeUpstream()
    app = spawnService(
      {
        PORT: String(await freePort()),
        APP_DATABASE_URL: await createDatabase(),
        UPSTREAM_BASE_URL: up.url,
        UPSTREAM_API_KEY: "sk-test",
        SERVICE_API_KEY: "gateway-key",
        EXTRACTION_CONCURRENCY: "0"
      },
      join(root, "examples/embed/main.ts")
    )
    await waitUntilHealthy(app, 60_000, "/hello")
  })
  afterAll(async () => {
    app.child.kill("SIGTERM")
    await app.exited
    await up.close()
  })

  const auth = { authorization: "Bearer gateway-key", "content-type": "application/json" }

  it("serves its own routes, open, beside the gateway's, guarded", async () => {
    expect(await (await fetch(`${app.baseUrl}/hello`)).text()).toBe("Hello from Example App")
    const denied = await fetch(`${app.baseUrl}/api/profiles`)
    expect(denied.status).toBe(401)
    expect(await denied.json()).toMatchObject({ error: { code: "missing_api_key" } })
    expect((await fetch(`${app.baseUrl}/api/profiles`, { headers: auth })).status).toBe(200)
  })

  it("runs the proxy with the plugin it registered in code, on its own database client", async () => {
    const res = await fetch(`${app.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { ...auth, "x-service-id": "embedded-user" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] })
    })
    expect(res.status).toBe(200)
    expect(JSON.parse(res.headers.get("x-service-context")!)).toMatchObject({ plugins: ["example-plan"] })
    expect(JSON.stringify(up.requests[0]!.body)).toContain("The user is on the Pro plan of Example App.")
    const summary = await fetch(`${app.baseUrl}/app/users/embedded-user/summary`)
    expect(await summary.json()).toEqual({ user: "embedded-user", summary: null })
  })
})

describe("the published package", () => {
  it("is built by `npm ci` itself: a fresh clone imports it by its name with no other step", async () => {
    const { scripts } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>
    }
    expect(scripts["prepare"]).toBe("npm run build")
  })

  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "gateway-package-"))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it("builds, packs only the library, and resolves with its types from a consumer", async () => {
    await run("npm", ["run", "build"], { cwd: root })
    // Built just now (`npm pack` would build again through `prepare`).
    const { stdout } = await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], {
      cwd: root
    })
    const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
    const files = packed!.files.map((file) => file.path)
    expect(files).toEqual(
      expect.arrayContaining([
        "dist/index.js",
        "dist/index.d.ts",
        "dist/plugins/Plugin.d.ts",
        "dist/client/index.d.ts",
        "dist/cli/main.js",
        "bin/profile-memory-gateway.js",
        "package.json",
        "README.md"
      ])
    )
    expect(files.filter((file) => /(^|\/)(test|plugins\/[a-z-]+\/|examples)\/|\.test\.|^src\//.test(file))).toEqual([])

    // A consumer project with the tarball installed and the same dependencies.
    const consumer = join(dir, "consumer")
    const installed = join(consumer, "node_modules", "profile-memory-gateway")
    await mkdir(installed, { recursive: true })
    await run("tar", ["-xzf", join(dir, packed!.filename), "-C", installed, "--strip-components=1"])
    const { dependencies } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
      dependencies: Record<string, string>
    }
    const topLevel = new Set([...Object.keys(dependencies), "@types/node"].map((name) => name.split("/")[0]!))
    for (const dependency of topLevel) {
      await symlink(join(root, "node_modules", dependency), join(consumer, "node_modules", dependency))
    }
    await writeFile(join(consumer, "package.json"), JSON.stringify({ type: "module" }))
    await writeFile(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2024",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ["node"]
        }
      })
    )
    await writeFile(
      join(consumer, "consumer.ts"),
      `
import { Effect, Layer } from "effect"
import { AppConfig, definePlugin, GatewayServices, type Plugin, Profile, Profiles } from "profile-memory-gateway"

const plugin: Plugin = definePlugin({ name: "consumer", hooks: { inject: () => Effect.succeed([]) } })
export const services = GatewayServices({ plugins: [plugin] }).pipe(Layer.provide(AppConfig.layer))
export const lookup = Effect.gen(function*() {
  const profiles = yield* Profiles
  const profile: Profile = yield* profiles.find("someone")
  return profile.externalId
})
export const config = AppConfig

import { createGatewayClient, NotFound } from "profile-memory-gateway/client"
export const userOf = async (id: string) => {
  const client = await createGatewayClient({ url: "http://localhost:3100" })
  try {
    const { profile } = await client.profiles.get({ params: { id } })
    return profile.externalId
  } catch (error) {
    return error instanceof NotFound ? error.error.message : undefined
  }
}
`
    )
    const typecheck = await run(join(root, "node_modules", ".bin", "tsc"), ["-p", join(consumer, "tsconfig.json")], {
      cwd: consumer
    }).then(
      () => "ok",
      (error: { stdout?: string }) => error.stdout ?? String(error)
    )
    expect(typecheck).toBe("ok")
    const { stdout: loaded } = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        "const m = await import('profile-memory-gateway'); console.log(typeof m.GatewayLive, typeof m.definePlugin, typeof m.Profiles)"
      ],
      { cwd: consumer }
    )
    expect(loaded.trim()).toBe("function function function")
    // Every subpath the package exports, as the docs import it.
    const { exports } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
      exports: Record<string, unknown>
    }
    for (const subpath of Object.keys(exports)) {
      const specifier = subpath === "." ? "profile-memory-gateway" : `profile-memory-gateway/${subpath.slice(2)}`
      const { stdout: names } = await run(
        process.execPath,
        ["--input-type=module", "-e", `console.log(Object.keys(await import(${JSON.stringify(specifier)})).length)`],
        { cwd: consumer }
      )
      expect(Number(names.trim())).toBeGreaterThan(0)
    }
    // The CLI as `npx profile-memory-gateway` runs it from the package: the build, not the sources.
    const { stdout: version } = await run(
      process.execPath,
      [join(installed, "bin", "profile-memory-gateway.js"), "--version"],
      {
        cwd: consumer
      }
    )
    expect(version.trim()).toMatch(/^profile-memory-gateway v\d+\.\d+\.\d+$/)
    expect(JSON.parse(await readFile(join(installed, "package.json"), "utf8"))).toMatchObject({
      name: "profile-memory-gateway"
    })
  }, 120_000)
})
