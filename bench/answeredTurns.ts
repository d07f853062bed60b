/**
 * Simulated users talking to a gateway, keeping track of every turn whose answer they received in
 * full; and the check, after a crash and a restart, that each of those turns was stored exactly
 * once. Shared by `npm run bench:crash` and the crash test.
 */

export interface AnsweredTurn {
  readonly userId: string
  readonly question: string
  readonly answer: string
  readonly streamed: boolean
}

export interface LoadOptions {
  readonly baseUrl: string
  /** One simulated user per id: ids seen before are returning users, with a profile. */
  readonly userIds: ReadonlyArray<string>
  readonly turnsPerUser: number
  /** Called after each fully answered turn, with the number answered so far. */
  readonly onAnswered?: (answered: number) => void
}

interface Message {
  readonly role: "user" | "assistant"
  readonly content: string
}

/** The answer text of a completed stream, or `undefined` if the stream did not reach `[DONE]`. */
const streamedAnswer = (text: string) => {
  let answer = ""
  let done = false
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ")) continue
    const data = line.slice("data: ".length).trim()
    if (data === "[DONE]") done = true
    else {
      const delta = (JSON.parse(data) as { choices?: Array<{ delta?: { content?: string | null } }> }).choices?.[0]
        ?.delta
      answer += delta?.content ?? ""
    }
  }
  return done ? answer : undefined
}

/** One turn; resolves with the answer the client received in full, or `undefined` if it did not. */
const ask = async (baseUrl: string, userId: string, messages: ReadonlyArray<Message>, stream: boolean) => {
  try {
    const response = await fetch(`${baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-id": userId },
      body: JSON.stringify({ model: "crash-model", stream, messages })
    })
    const text = await response.text()
    if (response.status !== 200) return undefined
    if (stream) return streamedAnswer(text)
    return (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content
  } catch {
    // The gateway went away mid-request: this turn was not answered.
    return undefined
  }
}

/**
 * Runs the users concurrently, each asking its turns one after the other (with the history so
 * far), every other one streaming. Stops a user at its first unanswered turn.
 */
export const runUsers = async (options: LoadOptions): Promise<ReadonlyArray<AnsweredTurn>> => {
  const answered: Array<AnsweredTurn> = []
  const user = async (userId: string, index: number) => {
    const streamed = index % 2 === 0
    const history: Array<Message> = []
    for (let turn = 0; turn < options.turnsPerUser; turn++) {
      const question = `question ${turn} from ${userId} (${Math.random().toString(36).slice(2, 10)})`
      const answer = await ask(options.baseUrl, userId, [...history, { role: "user", content: question }], streamed)
      if (answer === undefined) return
      answered.push({ userId, question, answer, streamed })
      options.onAnswered?.(answered.length)
      history.push({ role: "user", content: question }, { role: "assistant", content: answer })
    }
  }
  await Promise.all(options.userIds.map(user))
  return answered
}

export interface StoredCheck {
  readonly answered: number
  /** Answered turns whose question and answer are not both in the user's export. */
  readonly missing: ReadonlyArray<AnsweredTurn>
  /** Answered turns stored more than once. */
  readonly duplicated: ReadonlyArray<AnsweredTurn>
}

interface ExportedMessage {
  readonly role: string
  readonly content: string
}

/** Reads each user's export from the (restarted) gateway and looks for every answered turn in it. */
export const checkStored = async (baseUrl: string, answered: ReadonlyArray<AnsweredTurn>): Promise<StoredCheck> => {
  const byUser = new Map<string, Array<AnsweredTurn>>()
  for (const turn of answered) byUser.set(turn.userId, [...(byUser.get(turn.userId) ?? []), turn])
  const missing: Array<AnsweredTurn> = []
  const duplicated: Array<AnsweredTurn> = []
  for (const [userId, turns] of byUser) {
    const response = await fetch(`${baseUrl}/api/profiles/${encodeURIComponent(userId)}/export`)
    const messages: ReadonlyArray<ExportedMessage> =
      response.status === 200 ? ((await response.json()) as { messages: ReadonlyArray<ExportedMessage> }).messages : []
    for (const turn of turns) {
      const at = messages.flatMap((message, index) =>
        message.role === "user" && message.content === turn.question ? [index] : []
      )
      const answeredAfter = at.some(
        (index) => messages.slice(index + 1).find((m) => m.role === "assistant")?.content === turn.answer
      )
      if (!answeredAfter) missing.push(turn)
      if (at.length > 1) duplicated.push(turn)
    }
  }
  return { answered: answered.length, missing, duplicated }
}
