import { gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { providers } from "../../src/providers/providers.ts"
import { redactedErrorAnswer, redactText } from "../../src/upstream/passthroughError.ts"

const SECRET = 'tenant/secret"key-1234'
const text = (body: Uint8Array) => new TextDecoder().decode(body)

describe("redactText", () => {
  it("redacts a key as written in JSON text too (escaped quotes and slashes)", () => {
    const json = JSON.stringify({ message: `bad key ${SECRET}` })
    expect(redactText(json, [SECRET])).toBe(JSON.stringify({ message: "bad key [redacted]" }))
    expect(redactText(json.replaceAll("/", "\\/"), [SECRET])).toBe('{"message":"bad key [redacted]"}')
  })

  it("hides the start of a key cut by the end of what was read, only when the body was cut", () => {
    expect(redactText("provided: tenant/se", [SECRET], true)).toBe("provided: [redacted]")
    expect(redactText("provided: tenant/se", [SECRET], false)).toBe("provided: tenant/se")
    // Three characters say nothing of the key.
    expect(redactText("provided: ten", [SECRET], true)).toBe("provided: ten")
  })
})

describe("redactedErrorAnswer", () => {
  const answer = (body: Uint8Array, headers: Record<string, string> = {}, truncated = false) => ({
    status: 401,
    headers: { "content-type": "application/json", "content-length": String(body.byteLength), ...headers },
    bytes: body,
    truncated
  })

  it("relays a body with nothing to hide byte for byte", () => {
    const body = new Uint8Array([0x7b, 0xff, 0x7d])
    const relayed = redactedErrorAnswer(answer(body, { "x-request-id": "req_1" }), [SECRET], providers.openai)
    expect(relayed.body).toBe(body)
    expect(relayed.headers).toEqual({
      "content-type": "application/json",
      "content-length": "3",
      "x-request-id": "req_1"
    })
  })

  it("sends a gzipped body inflated and redacted, its length fixed", () => {
    const body = gzipSync(Buffer.from(`{"error":{"message":"Incorrect key ${SECRET.replaceAll('"', '\\"')}"}}`))
    const relayed = redactedErrorAnswer(answer(body, { "content-encoding": "gzip" }), [SECRET], providers.openai)
    expect(text(relayed.body)).toBe('{"error":{"message":"Incorrect key [redacted]"}}')
    expect(relayed.headers["content-encoding"]).toBeUndefined()
    expect(relayed.headers["content-length"]).toBe(String(relayed.body.byteLength))
  })

  it("replaces a body it cannot read with an error of its own in the provider's shape", () => {
    const body = new Uint8Array([1, 2, 3])
    const openai = redactedErrorAnswer(answer(body, { "content-encoding": "zstd" }), [SECRET], providers.openai)
    expect(JSON.parse(text(openai.body))).toMatchObject({ error: { code: "upstream_error" } })
    const anthropic = redactedErrorAnswer(answer(body, { "content-encoding": "gzip" }), [SECRET], providers.anthropic)
    expect(JSON.parse(text(anthropic.body))).toMatchObject({ type: "error", error: { type: "api_error" } })
    expect(anthropic.headers["content-type"]).toBe("application/json")
  })

  it("redacts a key a provider put in a header", () => {
    const relayed = redactedErrorAnswer(
      answer(new Uint8Array(), { "x-debug": `key=${SECRET}` }),
      [SECRET],
      providers.openai
    )
    expect(relayed.headers["x-debug"]).toBe("key=[redacted]")
  })
})
