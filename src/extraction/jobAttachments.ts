import { type AttachmentKind, readingOf } from "../domain/Attachment.ts"
import { type AttachmentPolicy, type NotRead, notReadNote, whyNotHeld } from "./attachmentPolicy.ts"
import type { StoredAttachment } from "./ExtractionRepo.ts"
import type { PromptAttachment } from "./prompts.ts"

const CUT_MARK = "…"

/** What one job sends of its messages' images and files, and what its result says of the others. */
export interface JobAttachments {
  readonly sent: ReadonlyArray<PromptAttachment>
  /** The refs of each message's attachments sent (by message id). */
  readonly byMessage: ReadonlyMap<string, ReadonlyArray<string>>
  /** Each ref's kind: the sources a reply may name. */
  readonly kinds: ReadonlyMap<string, AttachmentKind>
  readonly read: { readonly images: number; readonly files: number }
  /** Those not read, by kind and reason ("1 image not read: …"), and the text files cut. */
  readonly notes: ReadonlyArray<string>
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")

/**
 * The job's attachments as the extraction model gets them, in the order they were said, each under a
 * ref (`a1`, …): images as `image_url` parts (a data URL rebuilt from the bytes, or the URL the user
 * gave, never fetched here), PDFs as `file` parts, text files as text within `characters` (what the
 * turn's text left of `EXTRACTION_MAX_INPUT_CHARACTERS`). Nothing is dropped silently: what is not
 * sent — not held when recorded, a modality the model does not take, over a limit — is counted in a note.
 */
export const jobAttachments = (
  stored: ReadonlyArray<StoredAttachment>,
  policy: AttachmentPolicy,
  characters: number
): JobAttachments => {
  const sent: Array<PromptAttachment> = []
  const byMessage = new Map<string, Array<string>>()
  const kinds = new Map<string, AttachmentKind>()
  const notRead = new Map<string, { readonly kind: AttachmentKind; readonly reason: NotRead; count: number }>()
  const cuts: Array<string> = []
  const skip = (kind: AttachmentKind, reason: NotRead) => {
    const key = `${kind}:${reason}`
    const entry = notRead.get(key)
    if (entry === undefined) notRead.set(key, { kind, reason, count: 1 })
    else entry.count++
  }
  let heldBefore = 0
  let remaining = characters
  for (const row of stored) {
    const held = row.url !== null || row.data !== null || row.text !== null
    if (!held) {
      // What the record did not hold, it did not hold for the first reason the rule gives.
      skip(row.kind, row.released ? "released" : (whyNotHeld(row, heldBefore, policy) ?? "recorded"))
      continue
    }
    heldBefore++
    // The settings may have changed since the turn was recorded: what the model no longer takes is not sent.
    const now = whyNotHeld(row, 0, policy)
    if (now !== undefined) {
      skip(row.kind, now)
      continue
    }
    if (sent.length >= policy.attachmentsPerJob) {
      skip(row.kind, "job_limit")
      continue
    }
    const ref = `a${sent.length + 1}`
    const reading = readingOf(row.kind, row.mediaType)
    let content: PromptAttachment["content"]
    if (row.text !== null) {
      const text = row.text
      if (text.length > remaining && remaining <= CUT_MARK.length) {
        skip(row.kind, "characters")
        continue
      }
      const kept = text.length <= remaining ? text : text.slice(0, remaining - CUT_MARK.length) + CUT_MARK
      if (kept !== text)
        cuts.push(`file ${ref} cut to its first ${kept.length} characters (EXTRACTION_MAX_INPUT_CHARACTERS)`)
      remaining -= kept.length
      content = { _tag: "Text", text: kept }
    } else if (row.url !== null) {
      content = { _tag: "Part", part: { type: "image_url", image_url: { url: row.url } } }
    } else if (row.data !== null && reading === "image") {
      const url = `data:${row.mediaType};base64,${base64(row.data)}`
      content = { _tag: "Part", part: { type: "image_url", image_url: { url } } }
    } else if (row.data !== null) {
      const fileData = `data:application/pdf;base64,${base64(row.data)}`
      content = {
        _tag: "Part",
        part: { type: "file", file: { filename: row.filename ?? `${ref}.pdf`, file_data: fileData } }
      }
    } else continue
    sent.push({ ref, kind: row.kind, mediaType: row.mediaType, filename: row.filename, content })
    kinds.set(ref, row.kind)
    byMessage.set(row.messageId, [...(byMessage.get(row.messageId) ?? []), ref])
  }
  return {
    sent,
    byMessage,
    kinds,
    read: {
      images: sent.filter((attachment) => attachment.kind === "image").length,
      files: sent.filter((attachment) => attachment.kind === "file").length
    },
    notes: [
      ...[...notRead.values()].map(({ kind, count, reason }) => notReadNote(kind, count, reason, policy)),
      ...cuts
    ]
  }
}
