import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { GatewayClient, Unauthorized } from "../src/client/index.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const example = fileURLToPath(new URL("../examples/client/main.ts", import.meta.url))
const ADMIN_KEY = "sk-admin-client"

describe("the typed client of the management API", () => {
  let gw: TestGateway
  beforeAll(async () => {
    // Private URLs allowed: docs/client.md's webhook goes to a name that need not resolve here.
    gw = await startGateway({ ADMIN_API_KEY: ADMIN_KEY, WEBHOOK_ALLOW_PRIVATE_URLS: "true" })
  })
  afterAll(() => gw.close())

  it("runs the example program: writes, reads, ranks, and gets a typed error", async () => {
    const output = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [example],
        { env: { PATH: process.env["PATH"] ?? "", GATEWAY_URL: gw.baseUrl, GATEWAY_ADMIN_KEY: ADMIN_KEY } },
        (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)))
      )
    )
    expect(output.trim().split("\n")).toEqual([
      'traits: preferred_language="Portuguese"',
      "top memory: Is training for the Lisbon marathon in April",
      "not found: 404 profile_not_found"
    ])
    const stored = await gw.request<{ profile: { traits: Array<{ key: string; value: unknown }> } }>(
      "GET",
      "/api/profiles/client-example",
      { headers: { authorization: `Bearer ${ADMIN_KEY}` } }
    )
    expect(stored.body.profile.traits).toMatchObject([{ key: "preferred_language", value: "Portuguese" }])
  })

  it("fails with the endpoint's typed errors in Effect programs, and acts in the namespace it names", async () => {
    const refused = await Effect.runPromise(
      Effect.flip(
        Effect.flatMap(GatewayClient, (client) => client.profiles.list({ query: {} })).pipe(
          Effect.provide(GatewayClient.layer({ url: gw.baseUrl, apiKey: "wrong" }))
        )
      )
    )
    expect(refused).toBeInstanceOf(Unauthorized)
    expect(refused).toMatchObject({ status: 401, error: { code: "invalid_api_key" } })

    const inAcme = GatewayClient.layer({ url: gw.baseUrl, apiKey: ADMIN_KEY, namespace: "acme" })
    const created = await Effect.runPromise(
      Effect.flatMap(GatewayClient, (client) => client.profiles.create({ payload: { externalId: "acme-user" } })).pipe(
        Effect.provide(inAcme)
      )
    )
    expect(created.profile).toMatchObject({ externalId: "acme-user", namespace: "acme" })
  })

  it("runs every example of docs/client.md as written, and each prints what its comments say", async () => {
    const examples = docExamples()
    expect(examples.length).toBeGreaterThan(10)
    expect(typeProblems(examples)).toEqual([])
    for (const example of examples) {
      const printed = await runExample(example, gw.baseUrl)
      expect({
        example: example.source,
        printed: printed
          .trim()
          .split("\n")
          .filter((line) => line !== "")
      }).toEqual({
        example: example.source,
        printed: example.prints.map((line) => expect.stringMatching(line))
      })
    }
  }, 180_000)
})

const root = fileURLToPath(new URL("..", import.meta.url))
const PACKAGE_MODULES: Readonly<Record<string, string>> = {
  "profile-memory-gateway/client": join(root, "src/client/index.ts"),
  "profile-memory-gateway/webhooks": join(root, "src/webhooks/signature.ts")
}

interface DocExample {
  /** The block as the page shows it. */
  readonly source: string
  /** The module run: the block, after the page's first one (which makes `client`) when it uses that `client`. */
  readonly module: string
  /** What each `console.log` prints, from its `// →` comment ("…": anything). */
  readonly prints: ReadonlyArray<RegExp>
}

/** The TypeScript blocks of docs/client.md, each as a module that runs on its own, in the page's order. */
const docExamples = (): Array<DocExample> => {
  const page = readFileSync(join(root, "docs/client.md"), "utf8")
  const blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!)
  const makesClient = (block: string) => /createGatewayClient\(|GatewayClient\.(layer|make)\(/.test(block)
  const setup = blocks.find((block) => block.includes("createGatewayClient("))!
  const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  // The first block is in every one that uses its `client`, not on its own (where nothing reads it).
  return blocks
    .filter((block) => block !== setup)
    .map((source) => ({
      source,
      module: Object.entries(PACKAGE_MODULES).reduce(
        (text, [name, file]) => text.replaceAll(`"${name}"`, JSON.stringify(file)),
        makesClient(source) ? source : `${setup}\n${source}`
      ),
      prints: [...source.matchAll(/\/\/ → (.*)$/gm)].map(
        (match) => new RegExp(`^${match[1]!.split("…").map(literally).join(".*")}$`)
      )
    }))
}

/** What the compiler finds wrong with the examples, under the project's own settings. */
const typeProblems = (examples: ReadonlyArray<DocExample>): Array<string> => {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => {}
    }
  )!
  // Beside the tests (as ES modules of this package, with its node_modules), never written to disk.
  const files = new Map(examples.map((example, i) => [join(root, "test", `.client-docs/example${i}.ts`), example]))
  const host = ts.createCompilerHost(config.options)
  const { fileExists, getSourceFile, readFile } = host
  host.getSourceFile = (name, language, ...rest) => {
    const example = files.get(name)
    return example === undefined
      ? getSourceFile(name, language, ...rest)
      : ts.createSourceFile(name, example.module, language)
  }
  host.fileExists = (name) => files.has(name) || fileExists(name)
  host.readFile = (name) => files.get(name)?.module ?? readFile(name)
  const program = ts.createProgram({ rootNames: [...files.keys()], options: config.options, host })
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const example = diagnostic.file === undefined ? undefined : files.get(diagnostic.file.fileName)
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")
    return example === undefined ? text : `${text}\nin:\n${example.source}`
  })
}

/** Runs an example as a program of its own against the gateway at `url`; what it printed. */
const runExample = (example: DocExample, url: string) =>
  new Promise<string>((resolve, reject) => {
    const child = execFile(
      process.execPath,
      ["--input-type=module-typescript"],
      { cwd: root, env: { PATH: process.env["PATH"] ?? "", GATEWAY_ADMIN_KEY: ADMIN_KEY }, timeout: 60_000 },
      (error, stdout, stderr) =>
        error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}\nin:\n${example.source}`))
    )
    child.stdin?.end(example.module.replaceAll('"http://localhost:3100"', JSON.stringify(url)))
  })
