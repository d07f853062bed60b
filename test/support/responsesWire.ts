/**
 * A Responses API answer as an OpenAI-compatible provider sends it: one assistant message with this
 * text. `messageId` names the message item (by default after the response).
 */
export const nativeResponse = (id: string, text: string, messageId = `msg_${id}`) => ({
  id,
  object: "response",
  created_at: 1_700_000_000,
  status: "completed",
  model: "gpt-test",
  output: [
    {
      type: "message",
      id: messageId,
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [] }]
    }
  ],
  usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 }
})
