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
