import { Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"

/** A user's conversations are at one of their limits (`ConversationsConfig`): nothing more is kept until some go. */
export class ConversationLimitReached
  extends Schema.TaggedError<ConversationLimitReached>()("ConversationLimitReached", {
    limit: Schema.Literals(["conversations", "bytes"]),
    maximum: Schema.Int
  })
  implements ClientFacing<400>
{
  get clientError() {
    const what =
      this.limit === "conversations"
        ? `${this.maximum} conversations (CONVERSATIONS_MAX_PER_USER)`
        : `${this.maximum} bytes of conversation items and metadata (CONVERSATIONS_MAX_BYTES_PER_USER)`
    return clientError(
      400,
      "conversation_limit_reached",
      `This user keeps ${what} already: delete conversations or items to make room`
    )
  }
}
