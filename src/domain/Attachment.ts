import { Schema } from "effect"

/**
 * The images and files of a user's turn, as the gateway keeps them for its extraction
 * (`message_attachments`), and what the extraction model may be sent (`EXTRACTION_MODALITIES`).
 */

export const AttachmentKind = Schema.Literals(["image", "file"])
export type AttachmentKind = typeof AttachmentKind.Type

/** What the extraction model reads: text always, images and files when the operator says it can. */
export const Modality = Schema.Literals(["text", "image", "file"])
export type Modality = typeof Modality.Type

/** Image types the OpenAI-compatible models take. */
const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"])

/** Types read as text besides `text/*`. */
const TEXT_TYPES: ReadonlySet<string> = new Set([
  "application/json",
  "application/x-ndjson",
  "application/xml",
  "application/yaml",
  "application/x-yaml",
  "application/csv",
  "application/javascript",
  "application/x-sh",
  "application/sql",
  "application/toml"
])

/** The media type without its parameters (`text/plain; charset=utf-8` → `text/plain`), lower-cased; `image/jpg` is JPEG's. */
export const bareMediaType = (mediaType: string): string => {
  const bare = mediaType.split(";")[0]!.trim().toLowerCase()
  return bare === "image/jpg" ? "image/jpeg" : bare
}

/**
 * How the extraction reads an attachment of this kind and type: an image (`null` type: given by URL),
 * a PDF, a text file; none: not a type it reads.
 */
export const readingOf = (kind: AttachmentKind, mediaType: string | null): "image" | "pdf" | "text" | undefined => {
  const type = mediaType === null ? null : bareMediaType(mediaType)
  if (kind === "image") return type === null || IMAGE_TYPES.has(type) ? "image" : undefined
  if (type === null) return undefined
  if (type === "application/pdf") return "pdf"
  return type.startsWith("text/") || TEXT_TYPES.has(type) ? "text" : undefined
}

/** The media type a file's name implies, for a file sent without one. */
export const mediaTypeOfName = (filename: string | null): string | null => {
  const extension = filename?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1]
  switch (extension) {
    case "pdf":
      return "application/pdf"
    case "txt":
    case "log":
      return "text/plain"
    case "md":
    case "markdown":
      return "text/markdown"
    case "csv":
      return "text/csv"
    case "html":
    case "htm":
      return "text/html"
    case "json":
      return "application/json"
    case "xml":
      return "application/xml"
    case "yaml":
    case "yml":
      return "application/yaml"
    case "png":
      return "image/png"
    case "jpg":
    case "jpeg":
      return "image/jpeg"
    case "gif":
      return "image/gif"
    case "webp":
      return "image/webp"
    default:
      return null
  }
}
