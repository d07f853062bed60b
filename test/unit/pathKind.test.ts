import { Headers } from "effect/http"
import { describe, expect, it } from "vitest"
import { errorFormatOf } from "../../src/apis/errorFormat.ts"
import { classifyPath, scopeOf } from "../../src/app/pathKind.ts"

/** Ways to write a path that the router serves as the path itself. */
const variants = (path: string): ReadonlyArray<string> => [
  path.toUpperCase(),
  `${path}/`,
  `/${path}`,
  path.replace(/\//g, "//"),
  // The second character percent-encoded (`/%6detrics`), and every letter.
  `${path.slice(0, 1)}%${path.charCodeAt(1).toString(16)}${path.slice(2)}`,
  path.replace(/[a-z]/g, (letter) => `%${letter.charCodeAt(0).toString(16)}`),
  `${path};x=1`,
  `http://elsewhere${path}`
]

describe("the kind of a path, read as the router reads it", () => {
  it.each([
    ["/metrics", "metrics", "admin"],
    ["/api/profiles", "management", "admin"],
    ["/v1/chat/completions", "memory", "app"],
    ["/v1/messages", "memory", "app"],
    ["/v1/embeddings", "passthrough", "app"],
    ["/v1/conversations/conv_1/items", "conversations", "app"],
    ["/mcp", "mcp", "app"],
    ["/health", "public", "public"],
    ["/console/app.js", "public", "public"],
    ["/admin-later", "unknown", "admin"]
  ] as const)("%s is %s (%s keys), however it is written", (path, kind, scope) => {
    for (const written of [path, ...variants(path)]) {
      const found = classifyPath(written)
      expect({ written, kind: found.kind, scope: scopeOf(found) }).toEqual({ written, kind, scope })
    }
  })

  it("gives the paths below a proxied API that API's error format, and Anthropic's SDKs theirs everywhere", () => {
    const formatOf = (url: string, headers: Record<string, string> = {}) =>
      errorFormatOf({ url, headers: Headers.fromInput(headers) })
    expect(formatOf("/V1/Messages/batches")).toBe("anthropic")
    expect(formatOf("/v1/responses/resp_1")).toBe("openai")
    expect(formatOf("/v1/embeddings")).toBe("openai")
    expect(formatOf("/v1/embeddings", { "anthropic-version": "2023-06-01" })).toBe("anthropic")
  })
})
