import { Option, Schema } from "effect"
import { type AttachmentKind, bareMediaType, mediaTypeOfName } from "../../domain/Attachment.ts"

/**
 * The images and files in a chat message's content parts, in Chat Completions' own fields:
 * `image_url` (`{url}` or a string: a data URL or an http(s) URL) and `file` (`{file_data, filename}`:
 * a data URL or bare base64). Each API's conversion to chat messages puts its media in these fields
 * (`responses.ts`, `anthropic/messagesRequest.ts`), under its own part type, so the record names a
 * part as its API does.
 */

/** An image or a file of a message, as sent: by URL (images only) or its bytes in base64. */
export interface MediaPart {
  readonly kind: AttachmentKind
  /** `null`: not said (an image by URL). */
  readonly mediaType: string | null
  readonly filename: string | null
  readonly content: { readonly _tag: "Url"; readonly url: string } | { readonly _tag: "Data"; readonly base64: string }
}

const ImagePart = Schema.Struct({
  image_url: Schema.Union([Schema.String, Schema.Struct({ url: Schema.String })])
})
const FilePart = Schema.Struct({
  file: Schema.Struct({
    file_data: Schema.String,
    filename: Schema.optionalKey(Schema.NullOr(Schema.String))
  })
})
const decodeImage = Schema.decodeUnknownOption(ImagePart)
const decodeFile = Schema.decodeUnknownOption(FilePart)

const DATA_URL = /^data:([^,]*?),/
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Base64 as the database decodes it: the alphabet of RFC 4648 (URL-safe letters turned back), no spaces. */
const cleanBase64 = (text: string): string | undefined => {
  const clean = text.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/")
  return BASE64.test(clean) ? clean : undefined
}

/**
 * A data URL's media type and bytes (base64); none: not a data URL or not readable. A URL without
 * `;base64` holds percent-encoded text; without a media type it is `text/plain` (RFC 2397).
 */
export const parseDataUrl = (url: string): { readonly mediaType: string; readonly base64: string } | undefined => {
  const head = DATA_URL.exec(url.slice(0, 300))
  if (head === null) return undefined
  const params = head[1]!.split(";").map((param) => param.trim())
  const isBase64 = params.at(-1)?.toLowerCase() === "base64"
  const mediaType = params[0] === "" || params[0] === "base64" ? "text/plain" : bareMediaType(params[0]!)
  const payload = url.slice(head[0].length)
  if (isBase64) {
    const base64 = cleanBase64(payload)
    return base64 === undefined ? undefined : { mediaType, base64 }
  }
  try {
    return { mediaType, base64: Buffer.from(decodeURIComponent(payload), "utf8").toString("base64") }
  } catch {
    return undefined
  }
}

const isWebUrl = (url: string) => /^https?:\/\/[^\s]+$/i.test(url) && URL.canParse(url)

/** The image or file a content part carries, if it carries one the gateway can read. */
export const mediaOfPart = (part: unknown): MediaPart | undefined => {
  const image = decodeImage(part)
  if (Option.isSome(image)) {
    const url = typeof image.value.image_url === "string" ? image.value.image_url : image.value.image_url.url
    if (isWebUrl(url)) return { kind: "image", mediaType: null, filename: null, content: { _tag: "Url", url } }
    const data = parseDataUrl(url)
    return data === undefined
      ? undefined
      : { kind: "image", mediaType: data.mediaType, filename: null, content: { _tag: "Data", base64: data.base64 } }
  }
  const file = decodeFile(part)
  if (Option.isNone(file)) return undefined
  const filename = file.value.file.filename ?? null
  const fileData = file.value.file.file_data
  const base64 = fileData.startsWith("data:") ? undefined : cleanBase64(fileData)
  const data = fileData.startsWith("data:")
    ? parseDataUrl(fileData)
    : base64 === undefined
      ? undefined
      : { mediaType: mediaTypeOfName(filename) ?? "application/octet-stream", base64 }
  return data === undefined
    ? undefined
    : { kind: "file", mediaType: data.mediaType, filename, content: { _tag: "Data", base64: data.base64 } }
}

/** The media of a message's content, in order (none for a string). */
export const mediaOfContent = (content: unknown): ReadonlyArray<MediaPart> =>
  Array.isArray(content)
    ? content.flatMap((part: unknown) => {
        const media = mediaOfPart(part)
        return media === undefined ? [] : [media]
      })
    : []
