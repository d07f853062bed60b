import { createHash } from "node:crypto"
import { type AttachmentKind, type Modality, readingOf } from "../domain/Attachment.ts"
import { storableText } from "../domain/storableText.ts"
import type { MediaPart } from "../providers/openai/mediaParts.ts"
import type { TurnAttachment } from "../turns/TurnsRepo.ts"

/**
 * Which of a turn's images and files are held for its extraction, and why the others are not. One
 * rule for both ends: the record holds by it, and the job says by it why what it finds without
 * content was not held (the table keeps facts, not reasons).
 */

export interface AttachmentPolicy {
  readonly modalities: ReadonlyArray<Modality>
  readonly attachmentMaxBytes: number
  readonly attachmentsPerTurn: number
  readonly attachmentsPerJob: number
}

/** Why an attachment is not read: in the order they are checked. */
export type NotRead = "modality" | "type" | "size" | "turn_limit" | "job_limit" | "characters" | "released" | "recorded"

interface Facts {
  readonly kind: AttachmentKind
  readonly mediaType: string | null
  readonly bytes: number
}

/** Why an attachment is not held, given how many of its turn were held before it; none: it is held. */
export const whyNotHeld = (
  facts: Facts,
  heldBefore: number,
  policy: AttachmentPolicy
): Exclude<NotRead, "job_limit" | "characters" | "released" | "recorded"> | undefined => {
  if (!policy.modalities.includes(facts.kind)) return "modality"
  if (readingOf(facts.kind, facts.mediaType) === undefined) return "type"
  if (facts.bytes > policy.attachmentMaxBytes) return "size"
  if (heldBefore >= policy.attachmentsPerTurn) return "turn_limit"
  return undefined
}

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex")

/**
 * A turn's media (by message, in order) as stored: the digest of each, and the content of those its
 * extraction will read (`extract`: the turn has a job). What is not held is never kept, not even
 * for a while: a turn without extraction holds nothing.
 */
export const holdAttachments = (
  media: ReadonlyArray<ReadonlyArray<MediaPart>>,
  extract: boolean,
  policy: AttachmentPolicy
): ReadonlyArray<ReadonlyArray<TurnAttachment>> => {
  let held = 0
  return media.map((parts) =>
    parts.map((part): TurnAttachment => {
      const raw = part.content._tag === "Data" ? Buffer.from(part.content.base64, "base64") : part.content.url
      const digest = {
        kind: part.kind,
        mediaType: part.mediaType === null ? null : storableText(part.mediaType.slice(0, 255)),
        filename: part.filename === null ? null : storableText(part.filename.slice(0, 255)),
        bytes: typeof raw === "string" ? 0 : raw.length,
        sha256: sha256(raw),
        url: null,
        data: null,
        text: null
      }
      if (!extract || whyNotHeld(digest, held, policy) !== undefined) return digest
      held++
      if (typeof raw === "string") return { ...digest, url: raw }
      if (readingOf(part.kind, part.mediaType) === "text")
        return { ...digest, text: storableText(raw.toString("utf8")) }
      // The part's own base64 (checked when it was read), not the bytes encoded again.
      return { ...digest, data: part.content._tag === "Data" ? part.content.base64 : raw.toString("base64") }
    })
  )
}

const KIND_NAMES: Record<AttachmentKind, readonly [string, string]> = {
  image: ["image", "images"],
  file: ["file", "files"]
}
const MODALITY_NAMES: Record<Modality, string> = { text: "text", image: "images", file: "files" }

/** What the job's result says of the attachments of a kind it did not read for a reason. */
export const notReadNote = (kind: AttachmentKind, count: number, reason: NotRead, policy: AttachmentPolicy) => {
  const what = `${count} ${KIND_NAMES[kind][count === 1 ? 0 : 1]} not read`
  switch (reason) {
    case "modality":
      return `${what}: the extraction model takes ${policy.modalities.map((m) => MODALITY_NAMES[m]).join(" and ")} only (EXTRACTION_MODALITIES)`
    case "type":
      return `${what}: ${kind === "image" ? "only PNG, JPEG, GIF and WebP images" : "only PDF and text files"} are read`
    case "size":
      return `${what}: larger than EXTRACTION_ATTACHMENT_MAX_BYTES (${policy.attachmentMaxBytes} bytes)`
    case "turn_limit":
      return `${what}: more than EXTRACTION_ATTACHMENTS_PER_TURN (${policy.attachmentsPerTurn}) in one turn`
    case "job_limit":
      return `${what}: more than EXTRACTION_ATTACHMENTS_PER_JOB (${policy.attachmentsPerJob}) in one job`
    case "characters":
      return `${what}: no room left within EXTRACTION_MAX_INPUT_CHARACTERS`
    case "released":
      return `${what}: released before this run (an earlier run of the job read or released them)`
    case "recorded":
      return `${what}: not held when the turn was recorded (EXTRACTION_MODALITIES or the limits were different then)`
  }
}
