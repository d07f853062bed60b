import type { AttachmentKind } from "../domain/Attachment.ts"
import type { MessageRole } from "../domain/Message.ts"
import type { PerRequestTrait } from "../domain/PerRequestTrait.ts"
import type { ProfileId } from "../domain/Profile.ts"

/**
 * An image or a file of a user's message (`message_attachments`): its digest always; its content
 * (one of `url`, `data`, `text`) only while it is held for the turn's extraction.
 */
export interface TurnAttachment {
  readonly kind: AttachmentKind
  readonly mediaType: string | null
  readonly filename: string | null
  /** Decoded size; 0 for an image by URL. */
  readonly bytes: number
  /** SHA-256 (hex) of the bytes, or of the URL. */
  readonly sha256: string
  readonly url: string | null
  /** The bytes, in base64. */
  readonly data: string | null
  readonly text: string | null
}

export interface TurnMessage {
  readonly role: MessageRole
  readonly content: string
  readonly toolCalls: unknown
  readonly toolCallId: string | null
  /** The assistant's answer as the client knows it: the provider's (or the gateway's) id of the answer. */
  readonly answerId?: string | null
  /** A user message's images and files, in the order of its parts (their `position`). */
  readonly attachments?: ReadonlyArray<TurnAttachment>
}

/** One exchange: the new input messages of a request and the assistant's reply. */
export interface Turn {
  /**
   * The profile, if known: a request answered while the database was unavailable does not know it
   * yet; it is found (or created) by `userId` when the turn is written.
   */
  readonly profileId: ProfileId | undefined
  /** The external user id (the same for every turn of a profile). */
  readonly userId: string
  /** The namespace the user id belongs to. */
  readonly namespace: string
  readonly requestId: string
  readonly model: string
  readonly messages: ReadonlyArray<TurnMessage>
  /** The thread the turn belongs to (`X-Service-Thread-Id`), if any. */
  readonly threadId: string | undefined
  /** Write an extraction job for the turn (in the same statement, so both or neither exist). */
  readonly extract: boolean
  /** Its answer broke off after it started: stored as far as it went, marked so. */
  readonly incomplete?: boolean | undefined
  /** Per-request trait declarations, kept with the job so extraction honours them later. */
  readonly requestTraits: ReadonlyArray<PerRequestTrait>
  /** The key bound to a provider key whose request made the turn, kept with the job: extraction goes with it. */
  readonly keyId?: string | undefined
  /**
   * The context the request got at its conversation's tail (`INJECTION_PLACEMENT=latest`), kept with
   * the answer so that the next turn puts it back where it was.
   */
  readonly tail?: TurnTail | undefined
}

/**
 * A turn's tail: the hash of the items before it, what went there (`""`: nothing new), the earlier
 * tails that went back, and the profile's `forgetting` count it was rendered under (a tail of another
 * count is not stored: something it holds may have been deleted since).
 */
export interface TurnTail {
  readonly prefixHash: string
  readonly text: string
  readonly chain: ReadonlyArray<string>
  readonly forgetting: number
}

/** A turn as the writer holds it: its profile found, its ids chosen. */
export interface WritableTurn {
  readonly turn: Turn
  readonly profileId: ProfileId
  readonly messageIds: ReadonlyArray<string>
  readonly jobId: string | null
}
