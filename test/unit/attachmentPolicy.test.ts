import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { type AttachmentPolicy, holdAttachments } from "../../src/extraction/attachmentPolicy.ts"
import type { StoredAttachment } from "../../src/extraction/ExtractionRepo.ts"
import { jobAttachments } from "../../src/extraction/jobAttachments.ts"
import type { MediaPart } from "../../src/providers/openai/mediaParts.ts"

const policy = (overrides: Partial<AttachmentPolicy> = {}): AttachmentPolicy => ({
  modalities: ["text", "image", "file"],
  attachmentMaxBytes: 100,
  attachmentsPerTurn: 3,
  attachmentsPerJob: 8,
  ...overrides
})

const data = (
  kind: MediaPart["kind"],
  mediaType: string,
  bytes: Buffer,
  filename: string | null = null
): MediaPart => ({
  kind,
  mediaType,
  filename,
  content: { _tag: "Data", base64: bytes.toString("base64") }
})
const png = data("image", "image/png", Buffer.from("png-bytes"))

describe("holding a turn's images and files", () => {
  it("keeps the digest of each, and the content of those its extraction reads", () => {
    const text = Buffer.from("Allergic to peanuts")
    const [held] = holdAttachments(
      [
        [
          png,
          data("file", "text/plain", text, "a.txt"),
          { ...png, content: { _tag: "Url", url: "https://x.test/a.png" } }
        ]
      ],
      true,
      policy()
    )
    expect(held).toEqual([
      {
        kind: "image",
        mediaType: "image/png",
        filename: null,
        bytes: 9,
        sha256: createHash("sha256").update("png-bytes").digest("hex"),
        url: null,
        data: Buffer.from("png-bytes").toString("base64"),
        text: null
      },
      expect.objectContaining({ kind: "file", bytes: text.length, text: "Allergic to peanuts", data: null }),
      expect.objectContaining({
        bytes: 0,
        url: "https://x.test/a.png",
        sha256: createHash("sha256").update("https://x.test/a.png").digest("hex")
      })
    ])
  })

  it("holds nothing for a turn without extraction, nor what the model does not take or the limits leave out", () => {
    const content = (list: ReadonlyArray<{ url: string | null; data: string | null; text: string | null }>) =>
      list.map(({ url, data, text }) => url ?? data ?? text)
    expect(content(holdAttachments([[png]], false, policy())[0]!)).toEqual([null])
    expect(content(holdAttachments([[png]], true, policy({ modalities: ["text"] }))[0]!)).toEqual([null])
    const docx = data(
      "file",
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      Buffer.from("x")
    )
    const big = data("image", "image/png", Buffer.alloc(101))
    // The turn's limit counts across its messages.
    const held = holdAttachments(
      [
        [docx, big, png],
        [png, png, png]
      ],
      true,
      policy()
    )
    const pngData = Buffer.from("png-bytes").toString("base64")
    expect(held.map(content)).toEqual([
      [null, null, pngData],
      [pngData, pngData, null]
    ])
  })
})

const stored = (overrides: Partial<StoredAttachment> = {}): StoredAttachment => ({
  messageId: "m1",
  position: 0,
  kind: "image",
  mediaType: "image/png",
  filename: null,
  url: null,
  data: new Uint8Array(Buffer.from("png-bytes")),
  text: null,
  bytes: 9,
  released: false,
  ...overrides
})

describe("a job's attachments", () => {
  it("are sent under refs: images as image_url parts, PDFs as file parts, text files as text", () => {
    const job = jobAttachments(
      [
        stored(),
        stored({
          position: 1,
          kind: "file",
          mediaType: "application/pdf",
          filename: null,
          data: new Uint8Array([37, 80])
        }),
        stored({ messageId: "m2", kind: "file", mediaType: "text/csv", data: null, text: "a,b", filename: "t.csv" }),
        stored({ messageId: "m2", position: 1, mediaType: null, data: null, url: "https://x.test/c.png", bytes: 0 })
      ],
      policy(),
      1000
    )
    expect(job.sent.map((attachment) => [attachment.ref, attachment.content])).toEqual([
      ["a1", { _tag: "Part", part: { type: "image_url", image_url: { url: "data:image/png;base64,cG5nLWJ5dGVz" } } }],
      [
        "a2",
        {
          _tag: "Part",
          part: { type: "file", file: { filename: "a2.pdf", file_data: "data:application/pdf;base64,JVA=" } }
        }
      ],
      ["a3", { _tag: "Text", text: "a,b" }],
      ["a4", { _tag: "Part", part: { type: "image_url", image_url: { url: "https://x.test/c.png" } } }]
    ])
    expect(job.byMessage).toEqual(
      new Map([
        ["m1", ["a1", "a2"]],
        ["m2", ["a3", "a4"]]
      ])
    )
    expect(job.read).toEqual({ images: 2, files: 2 })
    expect(job.notes).toEqual([])
  })

  it("say why each one not sent was not: grouped by kind and reason, never dropped silently", () => {
    const job = jobAttachments(
      [
        stored({ data: null, bytes: 500 }),
        stored({ position: 1 }),
        stored({ position: 2, kind: "file", mediaType: "text/plain", data: null, text: "x".repeat(50) }),
        stored({ position: 3 }),
        stored({ position: 4, data: null }),
        stored({ position: 5, kind: "file", mediaType: "application/zip", data: null }),
        stored({ position: 6, data: null, released: true })
      ],
      policy({ attachmentsPerJob: 2 }),
      20
    )
    expect(job.sent.map((attachment) => attachment.ref)).toEqual(["a1", "a2"])
    expect(job.sent[1]!.content).toEqual({ _tag: "Text", text: `${"x".repeat(19)}…` })
    expect(job.notes).toEqual([
      "1 image not read: larger than EXTRACTION_ATTACHMENT_MAX_BYTES (100 bytes)",
      "1 image not read: more than EXTRACTION_ATTACHMENTS_PER_JOB (2) in one job",
      "1 image not read: more than EXTRACTION_ATTACHMENTS_PER_TURN (3) in one turn",
      "1 file not read: only PDF and text files are read",
      "1 image not read: released before this run (an earlier run of the job read or released them)",
      "file a2 cut to its first 20 characters (EXTRACTION_MAX_INPUT_CHARACTERS)"
    ])
  })

  it("that the model does not take are not sent, and counted", () => {
    const job = jobAttachments([stored(), stored({ position: 1 })], policy({ modalities: ["text", "file"] }), 100)
    expect(job.sent).toEqual([])
    expect(job.notes).toEqual([
      "2 images not read: the extraction model takes text and files only (EXTRACTION_MODALITIES)"
    ])
  })
})
