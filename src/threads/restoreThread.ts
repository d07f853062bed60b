import { estimateTokens } from "../injection/renderContext.ts"
import type { ChatMessage, ToolCall } from "../openai/chat.ts"
import { messageText } from "../openai/messageText.ts"
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

/** The share of the budget kept for older turns relevant to the new message. */
const RELEVANT_SHARE = 0.25
/** How relevant (keyword relevance, 0–1) an older turn must be to the new message to come back. */
const MIN_RELEVANCE = 0.35

/** What a request gets back of its thread, and what the receipt says of it. */
export interface Restoration {
  /** What goes before the request's own messages (after its system messages): the summary, relevant older turns, the latest turns. */
  readonly messages: ReadonlyArray<ChatMessage>
  /** Messages restored verbatim: the latest turns and the relevant older ones. */
  readonly restored: number
  /** Of those, the relevant older ones. */
  readonly relevant: number
  /** Whether the summary of the older turns went too. */
  readonly summarized: boolean
  /** Messages of the client's own history found at the end of the thread (not restored again). */
  readonly matched: number
  /** Earlier messages that went neither verbatim nor as relevant turns. */
  readonly omitted: number
  /** The client sent a history the thread does not end with: nothing is restored. */
  readonly historyDiffers: boolean
  /** When older turns are not in the summary yet: the time of the newest of them (the summary job's bound). */
  readonly summarizeUntil: number | undefined
}

/** A message's rough cost in tokens: its text and a few for its role and framing. */
const cost = (message: ThreadMessage) =>
  estimateTokens(message.content) +
  4 +
  (message.toolCalls === null ? 0 : estimateTokens(JSON.stringify(message.toolCalls)))

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

/** The summary as the provider reads it. */
export const summaryMessage = (text: string): ChatMessage => ({
  role: "system",
  content: `Earlier in this conversation (a summary kept by the gateway):\n${text}`
})

/**
 * What of its thread (`stored`, oldest first) a request gets back within `maxTokens`: the latest
 * whole turns verbatim, the older ones as the thread's summary (when one is written), and the older
 * turns most relevant to the new message (`RELEVANT_SHARE` of the budget, in their order). A client
 * that sent some history of its own is matched against the end of the thread: only what comes before
 * it is restored, so nothing is there twice; a history the thread does not end with gets nothing.
 */
export const restoreThread = (
  stored: ReadonlyArray<ThreadMessage>,
  request: ReadonlyArray<ChatMessage>,
  maxTokens: number,
  digest?: ThreadDigest
): Restoration => {
  const nothing = { messages: [], restored: 0, relevant: 0, summarized: false, summarizeUntil: undefined }
  if (stored.length === 0) return { ...nothing, matched: 0, omitted: 0, historyDiffers: false }
  const history = clientHistory(request)
  const tail = stored.slice(stored.length - history.length)
  const matches = history.length <= stored.length && history.every((sent, i) => sameMessage(tail[i]!, sent))
  if (!matches) return { ...nothing, matched: 0, omitted: stored.length, historyDiffers: true }

  const turns = turnsOf(stored.slice(0, stored.length - history.length))
  // A head without a user message (a thread recorded from the middle) is never restored on its own.
  const whole = (row: number) => turns[row]![0]!.role === "user"
  const summaryText = digest !== undefined && digest.text !== "" ? digest.text : undefined
  const summaryCost =
    summaryText === undefined
      ? 0
      : Math.min(estimateTokens(summaryMessage(summaryText).content as string) + 4, maxTokens)
  const relevantCap = Math.floor(maxTokens * RELEVANT_SHARE)
  const usable = summaryCost <= maxTokens / 2 ? maxTokens - summaryCost : maxTokens

  // The latest turns, within what the summary and the relevant turns leave.
  let recentStart = turns.length
  let spent = 0
  while (recentStart > 0 && spent + turnCost(turns[recentStart - 1]!) <= usable - relevantCap) {
    spent += turnCost(turns[recentStart - 1]!)
    recentStart--
  }
  // Older turns that speak to the new message, best first, within their share.
  const newMessage = request.filter((message) => message.role === "user").at(-1)
  const older = turns.slice(0, recentStart)
  const chosen = new Set<number>()
  if (older.length > 0 && newMessage !== undefined) {
    const index = buildKeywordIndex(older.map((turn) => termsOf(turn.map((message) => message.content).join("\n"))))
    const query = keywordQuery(index, queryTermsOf(messageText(newMessage.content)))
    const ranked = older
      .map((_, row) => ({ row, score: keywordScore(query, row) }))
      .filter(({ row, score }) => whole(row) && score >= MIN_RELEVANCE)
      .sort((a, b) => b.score - a.score)
    for (const { row } of ranked) {
      const turnSize = turnCost(older[row]!)
      if (spent + turnSize > usable) continue
      spent += turnSize
      chosen.add(row)
    }
  }
  // What the relevant turns left unused goes to more of the latest turns.
  while (recentStart > 0) {
    const previous = recentStart - 1
    const extra = chosen.has(previous) ? 0 : turnCost(turns[previous]!)
    if (spent + extra > usable) break
    spent += extra
    chosen.delete(previous)
    recentStart = previous
  }

  const notRecent = turns.slice(0, recentStart).flat()
  const relevantTurns = [...chosen].sort((a, b) => a - b).map((row) => turns[row]!)
  const relevantCount = relevantTurns.reduce((sum, turn) => sum + turn.length, 0)
  const recentTurns = turns.slice(recentStart).filter((_, i) => whole(recentStart + i))
  const recent = recentTurns.flat()
  const summarized = summaryText !== undefined && summaryCost <= maxTokens / 2 && notRecent.length > 0
  const newestOlder = notRecent.at(-1)?.createdAt
  return {
    messages: [
      ...(summarized ? [summaryMessage(summaryText!)] : []),
      ...relevantTurns.flat().map(asChatMessage),
      ...recent.map(asChatMessage)
    ],
    restored: relevantCount + recent.length,
    relevant: relevantCount,
    summarized,
    matched: history.length,
    omitted: stored.length - history.length - relevantCount - recent.length,
    historyDiffers: false,
    summarizeUntil:
      newestOlder !== undefined && newestOlder > (digest?.until ?? Number.NEGATIVE_INFINITY) ? newestOlder : undefined
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
