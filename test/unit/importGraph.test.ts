import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/** The source tree's own imports (relative ones, type-only included): file → the files it imports. */
const src = resolve(dirname(fileURLToPath(import.meta.url)), "../../src")
const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : /\.tsx?$/.test(entry.name) ? [join(dir, entry.name)] : []
  )
const IMPORT = /^(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gms
const graph = new Map(
  sourceFiles(src).map((file) => [
    file,
    [...readFileSync(file, "utf8").matchAll(IMPORT)].map((match) => resolve(dirname(file), match[1]!))
  ])
)

/** Every import circle, each as the files along it (found by depth-first search). */
const circles = (): Array<Array<string>> => {
  const found: Array<Array<string>> = []
  const state = new Map<string, "open" | "done">()
  const path: Array<string> = []
  const visit = (file: string) => {
    state.set(file, "open")
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "open") found.push(path.slice(path.indexOf(next)).map((f) => f.slice(src.length + 1)))
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, "done")
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return found
}

describe("the source tree", () => {
  it("reads its imports (the check below sees the whole tree)", () => {
    expect(graph.size).toBeGreaterThan(100)
    expect(graph.get(join(src, "main.ts"))?.length).toBeGreaterThan(0)
  })

  it("has no import circle, type-only imports included", () => {
    expect(circles()).toEqual([])
  })
})

/** The folder (top-level under `src/`) a file is in; the files directly in `src/` are the package's entry points. */
const folderOf = (file: string) => {
  const parts = file.slice(src.length + 1).split("/")
  return parts.length > 1 ? parts[0]! : "(entry)"
}

/**
 * The folders of `src/`, from the top floor down: a folder imports only folders on floors below it,
 * never one beside it or above. What a folder holds, and why it sits where it does: docs/architecture.md.
 */
const FLOORS: ReadonlyArray<ReadonlyArray<string>> = [
  // The command line, the package's entry points and the typed client.
  ["cli"],
  ["(entry)", "client"],
  // The composition: the layer graph, the configuration, the HTTP app and its middleware.
  ["app"],
  // What serves a request: the routes over kept Responses state, the pipeline, MCP, the profile API.
  ["responsesApi"],
  ["mcp", "pipeline", "profileApi"],
  // The features.
  ["retention"],
  ["memories", "threads"],
  ["extraction"],
  ["apis", "identity", "namespaces", "traits", "turns"],
  ["injection", "profiles"],
  ["snapshots"],
  ["retrieval"],
  ["auth", "embedding", "webhooks"],
  ["routing"],
  ["jobs", "keys", "responses"],
  ["budgets", "settings"],
  ["usage"],
  // What the features stand on.
  ["db"],
  ["background", "plugins"],
  ["http", "ratelimit", "upstream"],
  ["observability", "providers"],
  ["config", "domain"]
]

/** Imports that still run up a floor, each to be taken away (the test fails once one is gone, so the list only shrinks). */
const STILL_UPWARD: ReadonlyArray<string> = []

const floorOf = new Map(FLOORS.flatMap((folders, floor) => folders.map((folder) => [folder, floor] as const)))
const folderImports = new Set(
  [...graph].flatMap(([file, imports]) =>
    imports.map((target) => `${folderOf(file)} -> ${folderOf(target)}`).filter((edge) => !/^(.+) -> \1$/.test(edge))
  )
)

describe("the folders of the source tree", () => {
  it("each sit on one floor", () => {
    const folders = new Set([...graph.keys()].map(folderOf))
    expect([...folders].filter((folder) => !floorOf.has(folder))).toEqual([])
    expect([...floorOf.keys()].filter((folder) => !folders.has(folder))).toEqual([])
  })

  it("import only the floors below them", () => {
    const upward = [...folderImports].filter((edge) => {
      const [from, to] = edge.split(" -> ") as [string, string]
      return floorOf.get(from)! >= floorOf.get(to)! && !STILL_UPWARD.includes(edge)
    })
    expect(upward).toEqual([])
  })

  it("still have each import listed as running up (remove it from the list once it is gone)", () => {
    expect(STILL_UPWARD.filter((edge) => !folderImports.has(edge))).toEqual([])
  })
})

describe("the files of the source tree", () => {
  it("are at most 450 lines each", () => {
    const long = sourceFiles(src)
      .map((file) => ({ file: file.slice(src.length + 1), lines: readFileSync(file, "utf8").split("\n").length }))
      .filter(({ lines }) => lines > 450)
    expect(long).toEqual([])
  })

  it("hold one migration each, every one of them listed in the order they run", () => {
    const dir = join(src, "db/migrations")
    const files = readdirSync(dir).map((file) => file.replace(/\.ts$/, ""))
    const listed = [...readFileSync(join(src, "db/migrations.ts"), "utf8").matchAll(/^ {2}"(\d{4}_\w+)": /gm)].map(
      (match) => match[1]
    )
    expect(listed).toEqual([...files].sort())
  })
})
