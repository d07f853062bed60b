/**
 * The scripted provider of `bench/promptCache.ts`: Chat Completions, Responses and Anthropic Messages,
 * non-streamed. Each answer is 490–650 characters, made from the latest user message alone
 * (deterministic, different for each message, blind to any context block), so a conversation's history
 * is the same whether it went through the gateway or not. Like OpenAI, it keeps each response it
 * answered (unless `store: false`) and rebuilds the conversation a `previous_response_id` continues:
 * what it records is the prompt it would render, not the body it was sent.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type Api, withoutBlocks } from "./promptRendering.ts"

type Json = Readonly<Record<string, unknown>>

/** A request as the provider would render it (for Responses: with the conversation it continues). */
export interface ReceivedRequest {
  readonly api: Api
  readonly body: Json
}

const OPENINGS = [
  "Good question.",
  "Happy to help with that.",
  "Here is how I would approach it.",
  "That is a common situation, and it is manageable.",
  "Let me break that down."
]

const SENTENCES = [
  "Start with the smallest change you can keep up every day, even on your busiest ones, and build from there.",
  "Write the plan down somewhere you will see it, because a plan you can see is one you tend to follow.",
  "If anything feels off or gets worse, check with a professional rather than pushing through on your own.",
  "Give it about two weeks before judging whether it works: most changes take a little while to settle in.",
  "It helps to prepare the night before, so the morning is about doing rather than deciding.",
  "Keep a short note of what you tried and how it went; patterns show up faster than you would expect.",
  "Costs add up in small ways, so compare the two or three realistic options side by side before choosing.",
  "Ask the people around you what they have tried, since local advice is often the most practical.",
  "Set a reminder on your phone for the first week, until the new routine runs without thinking.",
  "Do not aim for perfect: something done three times a week beats a flawless plan you skip.",
  "Check the instructions or the manual first, because the fix is often simpler than it looks.",
  "Plan for the bad days too, with a fallback that takes five minutes instead of an hour.",
  "Break the task into steps of fifteen minutes or less and tick them off as you go.",
  "Timing matters more than most people think, so pick the moment of the day when you have the most energy.",
  "A second opinion is worth getting when the decision is expensive or hard to undo.",
  "Make it enjoyable where you can, with music, company or a small reward at the end.",
  "Think about what has worked for you before in a similar situation, and start from that rather than from scratch.",
  "Leave yourself some slack in the schedule, because things rarely take exactly as long as planned.",
  "If you share the plan with someone, they can remind you and it becomes easier to stick to.",
  "Look at the cheapest option first; it is often good enough, and you can upgrade later if it is not.",
  "Safety comes first: if there is any doubt, take the cautious route and ask someone qualified.",
  "Try one change at a time, so you can tell which one actually made the difference.",
  "Most of the benefit comes from the first few steps, so do not worry about getting every detail right.",
  "Keep whatever you need for it in one place, ready to go, so that starting takes no effort at all."
]

/** FNV-1a: a stable hash of the message, so the same message always gets the same answer. */
const hash = (text: string) => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0
  return h
}

/** Mulberry32: a small seeded generator, so each message draws its own sentences. */
const generator = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) >>> 0
  let t = Math.imul(seed ^ (seed >>> 15), seed | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

/** An answer of 490–650 characters: an opening and five or six sentences drawn by the message. */
export const answerTo = (message: string) => {
  const seed = hash(message)
  const next = generator(seed)
  const pool = [...SENTENCES]
  const picked = Array.from({ length: 5 + (seed % 2) }, () => pool.splice(Math.floor(next() * pool.length), 1)[0]!)
  return `${OPENINGS[Math.floor(next() * OPENINGS.length)]!} ${picked.join(" ")}`
}

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const asArray = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

const contentText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : asArray(content)
        .map((part) => (isObject(part) && typeof part["text"] === "string" ? part["text"] : ""))
        .join("\n")

/** The latest thing the user wrote, without any context block (a message holding only a block is skipped). */
const latestUserText = (messages: ReadonlyArray<unknown>) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (typeof message === "string") return message
    if (!isObject(message) || message["role"] !== "user") continue
    const text = withoutBlocks(contentText(message["content"]))
    if (text !== "") return text
  }
  return ""
}

const inputItems = (input: unknown): ReadonlyArray<unknown> =>
  typeof input === "string" ? [{ type: "message", role: "user", content: input }] : asArray(input)

export const startPromptCacheProvider = async () => {
  let received: Array<ReceivedRequest> = []
  /** Responses kept by id: the whole conversation each one ends (its input items, then its output). */
  const kept = new Map<string, ReadonlyArray<unknown>>()
  let counter = 0

  const answer = (path: string, body: Json): { status: number; json: unknown } => {
    const id = `${++counter}${Math.random().toString(16).slice(2, 10)}`
    if (path === "/v1/chat/completions") {
      received.push({ api: "chat", body })
      const text = answerTo(latestUserText(asArray(body["messages"])))
      return {
        status: 200,
        json: {
          id: `chatcmpl-${id}`,
          object: "chat.completion",
          created: 1_700_000_000,
          model: body["model"],
          choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
        }
      }
    }
    if (path === "/v1/messages") {
      received.push({ api: "messages", body })
      const text = answerTo(latestUserText(asArray(body["messages"])))
      return {
        status: 200,
        json: {
          id: `msg_${id}`,
          type: "message",
          role: "assistant",
          model: body["model"],
          content: [{ type: "text", text }],
          stop_reason: "end_turn",
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 }
        }
      }
    }
    if (path === "/v1/responses") {
      const { previous_response_id: previous, ...rest } = body
      const earlier = typeof previous === "string" ? kept.get(previous) : []
      if (earlier === undefined)
        return {
          status: 400,
          json: {
            error: {
              message: `Previous response with id '${previous}' not found.`,
              type: "invalid_request_error",
              code: "previous_response_not_found"
            }
          }
        }
      // What the model reads: the conversation the previous response ended, then this input.
      const input = [...earlier, ...inputItems(body["input"])]
      received.push({ api: "responses", body: { ...rest, input } })
      const output = [
        {
          type: "message",
          id: `msg_${id}`,
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: answerTo(latestUserText(input)), annotations: [] }]
        }
      ]
      const responseId = `resp_${id}`
      if (body["store"] !== false) kept.set(responseId, [...input, ...output])
      return {
        status: 200,
        json: {
          id: responseId,
          object: "response",
          created_at: 1_700_000_000,
          status: "completed",
          model: body["model"],
          instructions: body["instructions"] ?? null,
          previous_response_id: previous ?? null,
          store: body["store"] !== false,
          output,
          usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 }
        }
      }
    }
    return { status: 404, json: { error: { message: `no route ${path}`, type: "invalid_request_error" } } }
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      const { status, json } =
        req.method === "POST" ? answer(req.url ?? "", JSON.parse(raw) as Json) : { status: 404, json: {} }
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(json))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** The requests received since the last call. */
    take: () => {
      const out = received
      received = []
      return out
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
