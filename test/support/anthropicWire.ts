/** What the scripted provider answers as Anthropic: a Messages answer, and the frames of a stream. */

export const anthropicMessage = (
  content: Array<unknown>,
  stopReason = "end_turn",
  usage: Record<string, number> = { input_tokens: 20, output_tokens: 9 }
) => ({
  id: "msg_01",
  type: "message",
  role: "assistant",
  model: "claude-test",
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage
})

/** One SSE frame of Anthropic's stream: `event: <type>` and its data, which names the type too. */
export const anthropicEvent = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
