import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { makeStreamAssembler } from "../../src/providers/openai/StreamAssembler.ts"
import { makeChunkReader } from "../../src/providers/openai/stream.ts"

const encoder = new TextEncoder()

const frame = (data: unknown) => `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`
const chunk = (delta: Record<string, unknown>, finish: string | null = null, index = 0) => ({
  id: "c1",
  object: "chat.completion.chunk",
  choices: [{ index, delta, finish_reason: finish }]
})

/** Feeds the SSE text to a reader in the given pieces and assembles what it reads. */
const assemble = (text: string, cuts: ReadonlyArray<number> = []) => {
  const read = makeChunkReader()
  const assembler = makeStreamAssembler()
  const bytes = encoder.encode(text)
  const bounds = [
    0,
    ...[...new Set(cuts)].filter((cut) => cut > 0 && cut < bytes.length).sort((a, b) => a - b),
    bytes.length
  ]
  const relayed: Array<Uint8Array> = []
  for (let i = 0; i + 1 < bounds.length; i++) {
    const piece = read(bytes.subarray(bounds[i], bounds[i + 1]))
    relayed.push(piece.bytes)
    for (const event of piece.events) assembler.add(event)
  }
  return { assembler, relayed: Buffer.concat(relayed).toString() }
}

const answer = [
  frame(chunk({ role: "assistant", content: "" })),
  frame(chunk({ content: "Hello, " })),
  ": a comment the provider sends\n\n",
  frame(chunk({ content: "wörld 👋" })),
  frame(
    chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "look", arguments: "" } }] })
  ),
  frame(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] })),
  frame(chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] })),
  frame(chunk({ content: "other choice" }, null, 1)),
  frame(chunk({}, "tool_calls")),
  frame({ id: "c1", choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }),
  frame("[DONE]")
].join("")

describe("stream assembly", () => {
  it("rebuilds the first choice's text and tool calls from the relayed chunks", () => {
    const { assembler, relayed } = assemble(answer)
    expect(relayed).toBe(answer)
    expect(assembler.isComplete()).toBe(true)
    expect(assembler.reply()).toEqual({
      // The provider's id of the answer, from its first chunk.
      answerId: "c1",
      content: "Hello, wörld 👋",
      toolCalls: [{ id: "call_1", type: "function", function: { name: "look", arguments: '{"q":1}' } }],
      finishReason: "tool_calls"
    })
  })

  it("gives the same answer however the bytes are cut (events and characters split across chunks)", () => {
    const whole = assemble(answer).assembler.reply()
    fc.assert(
      fc.property(fc.array(fc.nat({ max: answer.length * 2 }), { maxLength: 12 }), (cuts) => {
        const { assembler, relayed } = assemble(answer, cuts)
        expect(relayed).toBe(answer)
        expect(assembler.reply()).toEqual(whole)
      })
    )
  })

  it("is not complete until a finish reason or [DONE] arrives", () => {
    const { assembler } = assemble(frame(chunk({ content: "partial" })))
    expect(assembler.isComplete()).toBe(false)
    expect(assembler.reply().content).toBe("partial")
  })

  it("passes over events that are not chunks it understands", () => {
    const { assembler } = assemble(
      [frame("not json"), frame({ choices: "nope" }), frame(chunk({ content: "ok" }, "stop"))].join("")
    )
    expect(assembler.reply()).toEqual({ answerId: "c1", content: "ok", toolCalls: [], finishReason: "stop" })
  })
})
