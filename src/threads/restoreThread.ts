import { messageText } from "../domain/messageText.ts"
import { estimateTokens } from "../injection/renderContext.ts"
import type { ChatMessage, ToolCall } from "../providers/openai/chat.ts"
import { buildKeywordIndex, keywordQuery, keywordScore } from "../retrieval/keywordIndex.ts"
import { queryTermsOf, termsOf } from "../retrieval/terms.ts"

/** A message of a thread as it was recorded. */
export interface ThreadMessage {
  readonly role: string
  readonly content: string
  readonly toolCalls: ReadonlyArray<ToolCall> | null
  readonly toolCallId: string | null
  /** When it was recorded, epoch milliseconds. */
  readonly createdAt: number
}

/** The rolling summary of a thread's older turns, and the time of the last message it covers. */
export interface ThreadDigest {
  readonly text: string
  readonly until: number
}

/** The note of older turns relevant to the new message gets at most this share of the budget, on top of the restored history. */
const RELEVANT_SHARE = 0.25
/** How relevant (keyword relevance, 0–1) an older turn must be to the new message to go in the note. */
const MIN_RELEVANCE = 0.35
/**
 * How far above the budget the restored history may go while the summary job catches up with the
 * window's next start: the window stays where the summary ends (the provider's cached prefix) as
 * long as that keeps within this share of the budget above it; beyond, it moves without the summary.
 */
const LAG_SHARE = 0.25

/** The most a restoration puts before the request's own messages, in estimated tokens (`THREAD_MAX_TOKENS` and the lag allowance). */
export const restoredCeiling = (maxTokens: number): number => maxTokens + Math.floor(maxTokens * LAG_SHARE)

/** What a request gets back of its thread, and what the receipt says of it. */
export interface Restoration {
  /**
   * What goes before the request's own messages (after its system messages): the summary, when it
   * covers exactly the turns before the window, then the window's turns. The same bytes from one turn
   * to the next but for the previous turn added, except when the window moves.
   */
  readonly messages: ReadonlyArray<ChatMessage>
  /** Older turns relevant to the new message, as one text for the request's per-turn context (never in `messages`). */
  readonly note: string | undefined
  /** Messages restored verbatim: the window's turns. */
  readonly restored: number
  /** Messages of older turns in the note. */
  readonly relevant: number
  /** Whether the summary of the turns before the window went too. */
  readonly summarized: boolean
  /** Messages of the client's own history found at the end of the thread (not restored again). */
  readonly matched: number
  /** Earlier messages that went neither verbatim nor in the note. */
  readonly omitted: number
  /** The client sent a history the thread does not end with: nothing is restored. */
  readonly historyDiffers: boolean
  /** When the summary does not reach the window's start yet: the time of the last message before it (the summary job's bound). */
  readonly summarizeUntil: number | undefined
}

/** A message's rough cost in tokens: its text and a few for its role and framing. */
const cost = (message: ThreadMessage) =>
  estimateTokens(message.content) +
  4 +
  (message.toolCalls === null ? 0 : estimateTokens(JSON.stringify(message.toolCalls)))

/** A stored message as it goes to the provider: a pure function of the stored fields, so it is the same bytes every turn. */
const asChatMessage = (message: ThreadMessage): ChatMessage =>
  message.role === "tool"
    ? { role: "tool", content: message.content, tool_call_id: message.toolCallId }
    : message.toolCalls !== null && message.toolCalls.length > 0
      ? { role: message.role, content: message.content === "" ? null : message.content, tool_calls: message.toolCalls }
      : { role: message.role, content: message.content }

const isConversational = (message: ChatMessage) => message.role !== "system" && message.role !== "developer"

/** The client's own history: its messages up to the last assistant one, without the system prompt. */
const clientHistory = (messages: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> => {
  let last = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      last = i
      break
    }
  }
  return messages.slice(0, last + 1).filter(isConversational)
}

const sameMessage = (stored: ThreadMessage, sent: ChatMessage) =>
  stored.role === sent.role && stored.content === messageText(sent.content, { nameOtherParts: true })

/** Whole turns, oldest first: a user message and what answers it (a thread's head without a user message is one too). */
const turnsOf = (messages: ReadonlyArray<ThreadMessage>): ReadonlyArray<ReadonlyArray<ThreadMessage>> => {
  const turns: Array<Array<ThreadMessage>> = []
  for (const message of messages) {
    if (message.role === "user" || turns.length === 0) turns.push([message])
    else turns.at(-1)!.push(message)
  }
  return turns
}

const turnCost = (turn: ReadonlyArray<ThreadMessage>) => turn.reduce((sum, message) => sum + cost(message), 0)

/** A head without a user message (a thread recorded from the middle) is never restored on its own. */
const isWhole = (turn: ReadonlyArray<ThreadMessage>) => turn[0]!.role === "user"

/** The summary as the provider reads it. */
export const summaryMessage = (text: string): ChatMessage => ({
  role: "system",
  content: `Earlier in this conversation (a summary kept by the gateway):\n${text}`
})

/** The first line of the note of relevant older turns. */
export const NOTE_HEADING = "Earlier in this conversation, relevant to the latest message:"

const noteLine = (message: ThreadMessage) => {
  const calls =
    message.toolCalls === null || message.toolCalls.length === 0
      ? ""
      : ` [calls ${message.toolCalls.map((call) => `${call.function.name}(${call.function.arguments})`).join(", ")}]`
  return `${message.role}: ${message.content}${calls}`
}

/**
 * The turn the summary ends before, when it ends exactly at the start of one of `turns` (the thread's
 * turns before the client's own history, whose first message is `stored[0]`); 0 otherwise: no
 * summary, one ending within a turn, or one ending before what was read (whatever lies between is unknown).
 */
const summaryEnd = (
  stored: ReadonlyArray<ThreadMessage>,
  turns: ReadonlyArray<ReadonlyArray<ThreadMessage>>,
  digest: ThreadDigest | undefined
): number => {
  if (digest === undefined) return 0
  // Times are whole milliseconds, oldest first: what the summary covers is a head of the messages.
  let covered = 0
  while (covered < stored.length && stored[covered]!.createdAt <= digest.until) covered++
  let start = 0
  for (let turn = 0; turn <= turns.length; turn++) {
    if (start === covered) return turn
    if (turn < turns.length) start += turns[turn]!.length
  }
  return 0
}

/**
 * Where the window of verbatim turns starts, from `anchor` (where the summary ends, or the first turn
 * read). The cut points are the turns at which the turns' cost since the anchor passes each multiple
 * of `step`: they depend on the stored turns alone, never on the new message. The window starts at
 * the last cut point but one, so it holds at least a step's worth of turns and less than two steps;
 * it stays put, growing by a turn a turn, until another multiple is passed, then moves one step.
 */
const windowStart = (costs: ReadonlyArray<number>, anchor: number, step: number): number => {
  let total = 0
  for (let turn = anchor; turn < costs.length; turn++) total += costs[turn]!
  const level = (Math.floor(total / step) - 1) * step
  if (level <= 0) return anchor
  let sum = 0
  for (let turn = anchor; turn < costs.length; turn++) {
    if (sum >= level) return turn
    sum += costs[turn]!
  }
  return costs.length
}

/**
 * Older turns that speak to the new message, best first within `cap` tokens, as one text in their
 * order; with how many messages it holds.
 */
const relevantNote = (
  older: ReadonlyArray<ReadonlyArray<ThreadMessage>>,
  newMessage: ChatMessage | undefined,
  cap: number
): { readonly note: string | undefined; readonly messages: number } => {
  if (older.length === 0 || newMessage === undefined) return { note: undefined, messages: 0 }
  const index = buildKeywordIndex(older.map((turn) => termsOf(turn.map((message) => message.content).join("\n"))))
  const query = keywordQuery(index, queryTermsOf(messageText(newMessage.content)))
  const ranked = older
    .map((turn, row) => ({ row, lines: turn.map(noteLine), score: keywordScore(query, row) }))
    .filter(({ row, score }) => isWhole(older[row]!) && score >= MIN_RELEVANCE)
    .sort((a, b) => b.score - a.score)
  // Each line costs its text and one for its line break.
  let spent = estimateTokens(NOTE_HEADING) + 1
  const chosen: Array<{ readonly row: number; readonly lines: ReadonlyArray<string> }> = []
  for (const candidate of ranked) {
    const size = candidate.lines.reduce((sum, line) => sum + estimateTokens(line) + 1, 0)
    if (spent + size > cap) continue
    spent += size
    chosen.push(candidate)
  }
  if (chosen.length === 0) return { note: undefined, messages: 0 }
  const lines = chosen.sort((a, b) => a.row - b.row).flatMap((turn) => turn.lines)
  return { note: [NOTE_HEADING, ...lines].join("\n"), messages: lines.length }
}

/**
 * What of its thread (`stored`, oldest first) a request gets back, made to keep the provider's prompt
 * cache: each request should start with the bytes of the previous one.
 *
 * - The window of verbatim turns starts where the summary ends (or at the first turn) and grows by a
 *   turn a turn while the summary and it fit in `maxTokens`. When they no longer do, its next start is
 *   a cut point (`windowStart`, steps of half what the summary leaves of the budget); the summary job
 *   is asked to cover up to it (`summarizeUntil`), and once it does the window starts there, with the
 *   new summary: one change of the prefix per step.
 * - Until the summary reaches the next start, the window stays where the summary ends while that keeps
 *   within `restoredCeiling`; beyond it, the window moves without the summary (which is shown only
 *   when it covers exactly the turns before the window).
 * - Older turns relevant to the new message (`RELEVANT_SHARE` of the budget) come back apart, as the
 *   `note`, since they change with every message.
 *
 * A client that sent some history of its own is matched against the end of the thread: only what comes
 * before it is restored, so nothing is there twice; a history the thread does not end with gets nothing.
 */
export const restoreThread = (
  stored: ReadonlyArray<ThreadMessage>,
  request: ReadonlyArray<ChatMessage>,
  maxTokens: number,
  digest?: ThreadDigest
): Restoration => {
  const nothing = {
    messages: [],
    note: undefined,
    restored: 0,
    relevant: 0,
    summarized: false,
    summarizeUntil: undefined
  }
  if (stored.length === 0) return { ...nothing, matched: 0, omitted: 0, historyDiffers: false }
  const history = clientHistory(request)
  const tail = stored.slice(stored.length - history.length)
  const matches = history.length <= stored.length && history.every((sent, i) => sameMessage(tail[i]!, sent))
  if (!matches) return { ...nothing, matched: 0, omitted: stored.length, historyDiffers: true }

  const available = stored.slice(0, stored.length - history.length)
  const turns = turnsOf(available)
  const costs = turns.map(turnCost)
  const anchor = summaryEnd(stored, turns, digest)
  const summaryText = anchor > 0 && digest!.text !== "" ? digest!.text : undefined
  const summaryCost = summaryText === undefined ? 0 : estimateTokens(summaryMessage(summaryText).content as string) + 4
  // A summary worth more than half the budget is left out (it would leave too little for the turns).
  const summaryFits = summaryText !== undefined && summaryCost <= maxTokens / 2
  const reserved = summaryFits ? summaryCost : 0
  const next = windowStart(costs, anchor, (maxTokens - reserved) / 2)
  let fromAnchor = reserved
  for (let turn = anchor; turn < costs.length; turn++) fromAnchor += costs[turn]!
  // The summary lags behind the window's next start: stay where it ends while that is within the ceiling.
  const stays = next === anchor || fromAnchor <= restoredCeiling(maxTokens)
  const start = stays ? anchor : next
  const summarized = stays && summaryFits

  const window = turns.slice(start).filter(isWhole).flat()
  const { note, messages: relevant } = relevantNote(
    turns.slice(0, start),
    request.filter((message) => message.role === "user").at(-1),
    Math.floor(maxTokens * RELEVANT_SHARE)
  )
  const beforeNext = turns[next - 1]?.at(-1)?.createdAt
  return {
    messages: [...(summarized ? [summaryMessage(summaryText!)] : []), ...window.map(asChatMessage)],
    note,
    restored: window.length,
    relevant,
    summarized,
    matched: history.length,
    omitted: available.length - window.length - relevant,
    historyDiffers: false,
    summarizeUntil:
      beforeNext !== undefined && beforeNext > (digest?.until ?? Number.NEGATIVE_INFINITY) ? beforeNext : undefined
  }
}

/** The request's messages with the restored ones after its leading system messages. */
export const withRestored = (
  messages: ReadonlyArray<unknown>,
  restored: ReadonlyArray<ChatMessage>
): ReadonlyArray<unknown> => {
  let lead = 0
  while (lead < messages.length && !isConversational(messages[lead] as ChatMessage)) lead++
  return [...messages.slice(0, lead), ...restored, ...messages.slice(lead)]
}
