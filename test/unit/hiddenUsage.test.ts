import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import type { TokenUsage } from "../../src/domain/TokenUsage.ts"
import { makeChunkReader, type StreamEvent } from "../../src/providers/openai/stream.ts"

/**
 * A stream the gateway asked for its usage (`stream_options.include_usage`) for a client that did
 * not: read with `hideUsage`, the client gets the stream the provider sends without the option.
 */

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** JSON as Python's `json.dumps` writes it (`", "` and `": "`), as some OpenAI-compatible servers send it. */
const spacedJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(spacedJson).join(", ")}]`
    : value !== null && typeof value === "object"
      ? `{${Object.entries(value)
          .map(([key, item]) => `${JSON.stringify(key)}: ${spacedJson(item)}`)
          .join(", ")}}`
      : JSON.stringify(value)

const fields = (content: string) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-test",
  choices: [{ index: 0, delta: { content }, finish_reason: null }]
})

/** One chunk as the provider sends it without the option, and with it (`usage: null`, placed as given). */
const chunk = (content: string, usage: "last" | "first", write: (value: unknown) => string = JSON.stringify) => {
  const asked = usage === "first" ? { usage: null, ...fields(content) } : { ...fields(content), usage: null }
  return { plain: `data: ${write(fields(content))}\n\n`, asked: `data: ${write(asked)}\n\n` }
}

const USAGE = {
  prompt_tokens: 30,
  completion_tokens: 4,
  total_tokens: 34,
  prompt_tokens_details: { cached_tokens: 20 }
}
const TOKENS: TokenUsage = { input: 30, cachedInput: 20, cacheWrite: 0, output: 4, reasoning: 0 }

/** The same answer without the option and with it, its events framed by `\n`. */
const answer = (() => {
  const chunks = [
    chunk("", "last"),
    chunk("Hello, ", "first"),
    chunk("wörld 👋", "last", spacedJson),
    // Text that reads like the member, inside a string: not a member.
    chunk('say "usage":null, "usage": null', "first", spacedJson),
    chunk("日本語", "last")
  ]
  const comment = ": keep-alive\n\n"
  const named = 'event: note\ndata: {"note":"the provider\'s own event"}\n\n'
  const finish = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`
  const usageChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":${JSON.stringify(USAGE)}}\n\n`
  const done = "data: [DONE]\n\n"
  return {
    plain: [
      chunks[0]!.plain,
      comment,
      ...chunks.slice(1).map((c) => c.plain),
      named,
      `data: ${finish}}\n\n`,
      done
    ].join(""),
    asked: [
      chunks[0]!.asked,
      comment,
      ...chunks.slice(1).map((c) => c.asked),
      named,
      `data: ${finish},"usage":null}\n\n`,
      usageChunk,
      done
    ].join("")
  }
})()

const FRAMINGS = { lf: "\n", crlf: "\r\n", cr: "\r" } as const
const framed = (text: string, framing: keyof typeof FRAMINGS) => text.replaceAll("\n", FRAMINGS[framing])

/** Feeds the bytes to a reader cut at `cuts`: the bytes relayed, the events read, the usages reported. */
const read = (text: string, cuts: ReadonlyArray<number>, options: { readonly hideUsage?: boolean } = {}) => {
  const reader = makeChunkReader(options)
  const bytes = encoder.encode(text)
  const bounds = [0, ...[...new Set(cuts)].filter((cut) => cut > 0 && cut < bytes.length).sort((a, b) => a - b)]
  const relayed: Array<Uint8Array> = []
  const events: Array<StreamEvent> = []
  const usages: Array<TokenUsage> = []
  for (const [i, start] of bounds.entries()) {
    const piece = reader(bytes.subarray(start, bounds[i + 1] ?? bytes.length))
    relayed.push(piece.bytes)
    events.push(...piece.events)
    if (piece.usage !== undefined) usages.push(piece.usage)
  }
  return { relayed: decoder.decode(Buffer.concat(relayed)), pieces: relayed, events, usages }
}

const everyByte = (text: string) => Array.from({ length: encoder.encode(text).length }, (_, i) => i)

describe("a stream read with hideUsage", () => {
  it.each(Object.keys(FRAMINGS) as Array<keyof typeof FRAMINGS>)(
    "relays what the provider sends without the option, and reads the usage (%s framing)",
    (framing) => {
      const asked = framed(answer.asked, framing)
      const plain = framed(answer.plain, framing)
      for (const cuts of [[], everyByte(asked)]) {
        const hidden = read(asked, cuts, { hideUsage: true })
        expect(hidden.relayed).toBe(plain)
        expect(hidden.usages).toEqual([TOKENS])
        // The events read are the stream's, as without hiding.
        expect(hidden.events).toEqual(read(asked, []).events)
      }
    }
  )

  it("relays the same, cut anywhere (mid-event, mid-character, between a CR and its LF)", () => {
    const framings = fc.constantFrom(...(Object.keys(FRAMINGS) as Array<keyof typeof FRAMINGS>))
    const length = encoder.encode(framed(answer.asked, "crlf")).length
    fc.assert(
      fc.property(framings, fc.array(fc.integer({ min: 1, max: length }), { maxLength: 200 }), (framing, cuts) => {
        const hidden = read(framed(answer.asked, framing), cuts, { hideUsage: true })
        expect(hidden.relayed).toBe(framed(answer.plain, framing))
        expect(hidden.usages).toEqual([TOKENS])
      }),
      { numRuns: 200 }
    )
  })

  it("relays whole events only: a piece that completes none relays no bytes", () => {
    const [first, rest] = [answer.asked.slice(0, 20), answer.asked.slice(20)]
    const reader = makeChunkReader({ hideUsage: true })
    expect(reader(encoder.encode(first)).bytes).toHaveLength(0)
    const next = reader(encoder.encode(rest))
    expect(decoder.decode(next.bytes)).toBe(answer.plain)
  })

  it("drops the usage chunk, its piece still carrying the usage", () => {
    const reader = makeChunkReader({ hideUsage: true })
    const usageChunk = `data: {"id":"c","choices":[],"usage":${JSON.stringify(USAGE)}}\r\n\r\n`
    // Its blank line's last LF comes with the next piece: it goes where the event went.
    const piece = reader(encoder.encode(usageChunk.slice(0, -1)))
    expect(piece.bytes).toHaveLength(0)
    expect(piece.usage).toEqual(TOKENS)
    expect(decoder.decode(reader(encoder.encode("\ndata: [DONE]\r\n\r\n")).bytes)).toBe("data: [DONE]\r\n\r\n")
  })

  it("relays an event ending on a CR at once (a stream framed by CRs alone)", () => {
    const reader = makeChunkReader({ hideUsage: true })
    const piece = reader(encoder.encode('data: {"choices":[],"usage":null}\r\r'))
    expect(decoder.decode(piece.bytes)).toBe('data: {"choices":[]}\r\r')
    expect(decoder.decode(reader(encoder.encode("data: [DONE]\r\r")).bytes)).toBe("data: [DONE]\r\r")
  })
})

describe("a stream read as it is (the default)", () => {
  it("relays every piece byte for byte, the usage chunk included, and reads the usage", () => {
    const asked = framed(answer.asked, "crlf")
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: encoder.encode(asked).length }), { maxLength: 40 }), (cuts) => {
        const bytes = encoder.encode(asked)
        const reader = makeChunkReader()
        const bounds = [0, ...[...new Set(cuts)].sort((a, b) => a - b).filter((cut) => cut < bytes.length)]
        for (const [i, start] of bounds.entries()) {
          const piece = bytes.subarray(start, bounds[i + 1] ?? bytes.length)
          // The very bytes it was given.
          expect(reader(piece).bytes).toBe(piece)
        }
      })
    )
    expect(read(asked, everyByte(asked)).usages).toEqual([TOKENS])
    expect(read(asked, everyByte(asked)).relayed).toBe(asked)
  })
})
