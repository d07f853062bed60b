/**
 * The request path's realistic profile: the first 300 turns of one LoCoMo conversation as memories
 * (events at their session's time), asked that conversation's questions, each one new (a counter is
 * appended, so no two requests share a message and a repeated message never measures a cache).
 */
import type { LocomoConversation } from "./recall/locomo.ts"

export const CONVERSATION_PROFILE_SIZE = 300
export const CONVERSATION_USER = `conversation-${CONVERSATION_PROFILE_SIZE}`

/**
 * Creates the profile on a gateway and imports its memories (the API answers once they are stored):
 * the first 300 turns as `conversation-300`, unless told another name and size.
 */
export const seedConversationProfile = async (
  baseUrl: string,
  conversation: LocomoConversation,
  { externalId = CONVERSATION_USER, size = CONVERSATION_PROFILE_SIZE } = {}
) => {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
  }
  await post("/api/profiles", { externalId })
  await post(`/api/profiles/${externalId}/memories/import`, {
    memories: conversation.memories.slice(0, size).map((memory) => ({
      content: memory.content,
      type: "event",
      createdAt: new Date(memory.createdAt).toISOString(),
      occurredAt: new Date(memory.occurredAt).toISOString()
    }))
  })
}

/** The n-th request's chat completion: one of `questions`, made new by `n`. */
export const newMessageBody =
  (questions: ReadonlyArray<string>, stream = false) =>
  (n: number) =>
    JSON.stringify({
      model: "bench-model",
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "user", content: `${questions[n % questions.length]} (${Math.floor(n / questions.length)})` }
      ]
    })

/** Resolves once a gateway's background jobs (the memories' embeddings) have all run; fails if one failed. */
export const waitForJobs = async (baseUrl: string) => {
  while (true) {
    const { counts } = (await (await fetch(`${baseUrl}/api/jobs`)).json()) as {
      counts: { pending: number; running: number; failed: number }
    }
    if (counts.failed > 0) throw new Error("a background job failed")
    if (counts.pending + counts.running === 0) return
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}
