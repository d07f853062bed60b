import { describe, expect, it } from "@effect/vitest"
import { messageText } from "../../src/domain/messageText.ts"
import { toChatMessages } from "../../src/providers/anthropic/messagesRequest.ts"
import { mediaOfContent, mediaOfPart, parseDataUrl } from "../../src/providers/openai/mediaParts.ts"
import { inputAsChatMessages } from "../../src/providers/openai/responses.ts"

const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PNG = `data:image/png;base64,${PNG_BASE64}`
const PDF_BASE64 = Buffer.from("%PDF-1.4 hello").toString("base64")
const PDF = `data:application/pdf;base64,${PDF_BASE64}`

describe("a data URL", () => {
  it("gives its media type and base64 bytes; percent-encoded text is turned into base64", () => {
    expect(parseDataUrl(PNG)).toEqual({ mediaType: "image/png", base64: PNG_BASE64 })
    expect(parseDataUrl("data:Text/Plain;charset=utf-8;base64,aGk=")).toEqual({
      mediaType: "text/plain",
      base64: "aGk="
    })
    expect(parseDataUrl("data:,caf%C3%A9")).toEqual({
      mediaType: "text/plain",
      base64: Buffer.from("café").toString("base64")
    })
    expect(parseDataUrl("data:image/png;base64,aGk-_w")).toEqual({ mediaType: "image/png", base64: "aGk+/w" })
  })

  it("that is not one, or not readable, gives nothing", () => {
    for (const url of ["https://x.test/a.png", "data:image/png;base64,***", "data:text/plain,%E0%A4%A", "data:nocomma"])
      expect(parseDataUrl(url)).toBeUndefined()
  })
})

describe("a chat content part", () => {
  it("carries an image as a data URL or an http(s) URL", () => {
    expect(mediaOfPart({ type: "image_url", image_url: { url: PNG, detail: "low" } })).toEqual({
      kind: "image",
      mediaType: "image/png",
      filename: null,
      content: { _tag: "Data", base64: PNG_BASE64 }
    })
    expect(mediaOfPart({ type: "image_url", image_url: "https://x.test/cat.png" })).toEqual({
      kind: "image",
      mediaType: null,
      filename: null,
      content: { _tag: "Url", url: "https://x.test/cat.png" }
    })
  })

  it("carries a file as a data URL, or as bare base64 typed by its name", () => {
    expect(mediaOfPart({ type: "file", file: { file_data: PDF, filename: "a.pdf" } })).toEqual({
      kind: "file",
      mediaType: "application/pdf",
      filename: "a.pdf",
      content: { _tag: "Data", base64: PDF_BASE64 }
    })
    expect(mediaOfPart({ type: "file", file: { file_data: "aGk=", filename: "notes.md" } })).toMatchObject({
      mediaType: "text/markdown",
      content: { _tag: "Data", base64: "aGk=" }
    })
    expect(mediaOfPart({ type: "file", file: { file_data: "aGk=" } })).toMatchObject({
      mediaType: "application/octet-stream",
      filename: null
    })
  })

  it("carries nothing the gateway can read when it is text, an id, another scheme or malformed", () => {
    for (const part of [
      { type: "text", text: "hi" },
      { type: "file", file: { file_id: "file-123" } },
      { type: "image_url", image_url: { url: "ftp://x.test/a.png" } },
      { type: "image_url", image_url: { url: 42 } },
      { type: "input_audio", input_audio: { data: "aGk=", format: "wav" } },
      null,
      "text"
    ])
      expect(mediaOfPart(part)).toBeUndefined()
    expect(mediaOfContent("a string")).toEqual([])
  })
})

describe("a Responses input as chat messages", () => {
  const [message] = inputAsChatMessages([
    {
      role: "user",
      content: [
        { type: "input_text", text: "Look" },
        { type: "input_image", image_url: PNG },
        { type: "input_file", file_data: PDF, filename: "r.pdf" },
        // Given by id: nothing to read.
        { type: "input_file" },
        { type: "input_image" }
      ]
    }
  ])

  it("keeps an image and a file sent with the request, under their own type for the record", () => {
    expect(message!.content).toEqual([
      { type: "text", text: "Look" },
      { type: "input_image", image_url: { url: PNG } },
      { type: "input_file", file: { file_data: PDF, filename: "r.pdf" } },
      { type: "input_file" },
      { type: "input_image" }
    ])
    expect(messageText(message!.content, { nameOtherParts: true })).toBe(
      "Look\n[input_image]\n[input_file]\n[input_file]\n[input_image]"
    )
    expect(mediaOfContent(message!.content).map((media) => [media.kind, media.mediaType, media.filename])).toEqual([
      ["image", "image/png", null],
      ["file", "application/pdf", "r.pdf"]
    ])
  })
})

describe("an Anthropic user message as chat messages", () => {
  const [message] = toChatMessages([
    {
      role: "user",
      content: [
        { type: "text", text: "See" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } },
        { type: "image", source: { type: "url", url: "https://x.test/b.png" } },
        {
          type: "document",
          source: { type: "base64", media_type: "application/pdf", data: PDF_BASE64 },
          title: "d.pdf"
        },
        { type: "document", source: { type: "text", media_type: "text/plain", data: "plain words" } },
        {
          type: "document",
          source: {
            type: "content",
            content: [
              { type: "text", text: "a" },
              { type: "text", text: "b" }
            ]
          }
        },
        { type: "document", source: { type: "url", url: "https://x.test/d.pdf" } },
        { type: "image", source: { type: "file", file_id: "file-9" } }
      ]
    }
  ])

  it("keeps images and documents under their own type, a plain-text document as a text file", () => {
    expect(messageText(message!.content, { nameOtherParts: true })).toBe(
      "See\n[image]\n[image]\n[document]\n[document]\n[document]\n[document]\n[image]"
    )
    const media = mediaOfContent(message!.content)
    expect(media.map((part) => [part.kind, part.mediaType, part.filename, part.content._tag])).toEqual([
      ["image", "image/png", null, "Data"],
      ["image", null, null, "Url"],
      ["file", "application/pdf", "d.pdf", "Data"],
      ["file", "text/plain", null, "Data"],
      ["file", "text/plain", null, "Data"]
    ])
    const texts = media
      .slice(3)
      .map((part) => (part.content._tag === "Data" ? Buffer.from(part.content.base64, "base64").toString() : ""))
    expect(texts).toEqual(["plain words", "a\nb"])
  })
})
