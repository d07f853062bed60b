import { createHash } from "node:crypto"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicMessage } from "./support/anthropicWire.ts"
import {
  eventually,
  type FakeUpstream,
  modelReply,
  type RecordedRequest,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/** A user's images and files reach the extraction model as parts, then only their digest stays. */

const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
const PNG = `data:image/png;base64,${PNG_BASE64}`
const PDF_BYTES = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
const PDF = `data:application/pdf;base64,${PDF_BYTES.toString("base64")}`
const CAT_URL = "https://images.example.com/cat.png"
const MAX_BYTES = 4096

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex")

interface ModelCall {
  readonly system: string
  /** The JSON document of the user message. */
  readonly data: {
    readonly conversation?: ReadonlyArray<{ content: string; attachments?: ReadonlyArray<string> }>
    readonly attachments?: ReadonlyArray<Record<string, unknown>>
  }
  /** The parts after the JSON (none: the user message is a string). */
  readonly parts: ReadonlyArray<Record<string, unknown>>
}

const callOf = (request: RecordedRequest): ModelCall => {
  const [system, user] = request.body!["messages"] as [{ content: string }, { content: unknown }]
  const content = user.content
  if (typeof content === "string") return { system: system.content, data: JSON.parse(content), parts: [] }
  const [first, ...parts] = content as Array<{ type: string; text: string }>
  return { system: system.content, data: JSON.parse(first!.text), parts }
}

const isSummary = (request: RecordedRequest) => callOf(request).system.includes("summary an AI assistant reads")

/** The extraction model: scripted by a marker in the turn's text; a turn saying FAIL-ME gets a 500. */
const extractionModel = async () => {
  const model = await startFakeUpstream()
  const replies = new Map<string, Reply>()
  model.handler = (request) => {
    if (isSummary(request)) return modelReply({ summary: "A summary." })
    const text = JSON.stringify(callOf(request).data.conversation ?? [])
    if (text.includes("FAIL-ME")) return { kind: "json", status: 500, body: { error: { message: "down" } } }
    for (const [marker, reply] of replies) if (text.includes(marker)) return reply
    return modelReply({ traits: [], memories: [] })
  }
  return {
    model,
    /** The extraction calls whose turn says `marker`. */
    callsFor: (marker: string) =>
      model.requests
        .filter((request) => !isSummary(request))
        .map(callOf)
        .filter((call) => JSON.stringify(call.data.conversation ?? []).includes(marker)),
    reply: (marker: string, reply: Reply) => replies.set(marker, reply)
  }
}

interface JobRow {
  readonly id: string
  readonly status: string
  readonly result: {
    readonly notes: ReadonlyArray<string>
    readonly attachmentsRead: { images: number; files: number }
  } | null
}

/** The user's turn job, once it has finished (succeeded or failed for good). */
const finishedJob = (gw: TestGateway, user: string) =>
  eventually(async () => {
    const [job] = await gw.query<JobRow>(
      `SELECT j.id, j.status, j.result FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id
       WHERE p.external_id = $1 AND j.kind = 'turn' ORDER BY j.created_at DESC LIMIT 1`,
      [user]
    )
    return job !== undefined && (job.status === "succeeded" || job.status === "failed") ? job : undefined
  }, 15_000)

interface AttachmentRow {
  readonly kind: string
  readonly mediaType: string | null
  readonly filename: string | null
  readonly held: boolean
  readonly bytes: number
  readonly sha256: string
  readonly extracted: boolean
}
const attachmentsOf = (gw: TestGateway, user: string) =>
  gw.query<AttachmentRow>(
    `SELECT a.kind, a.media_type AS "mediaType", a.filename,
            (a.data IS NOT NULL OR a.url IS NOT NULL OR a.text IS NOT NULL) AS held,
            a.bytes, a.sha256, a.extracted_at IS NOT NULL AS extracted
     FROM message_attachments a JOIN profiles p ON p.id = a.profile_id JOIN messages m ON m.id = a.message_id
     WHERE p.external_id = $1 ORDER BY m.created_at, a.position`,
    [user]
  )

const messagesOf = async (gw: TestGateway, user: string) =>
  (
    await gw.query<{ role: string; content: string }>(
      `SELECT m.role, m.content FROM messages m JOIN profiles p ON p.id = m.profile_id
       WHERE p.external_id = $1 ORDER BY m.created_at`,
      [user]
    )
  ).map((row) => [row.role, row.content])

describe("images and files, with EXTRACTION_MODALITIES=text,image,file", () => {
  let gw: TestGateway
  let up: FakeUpstream
  let anthropic: FakeUpstream
  let extraction: Awaited<ReturnType<typeof extractionModel>>
  beforeAll(async () => {
    up = await startFakeUpstream()
    anthropic = await startFakeUpstream()
    extraction = await extractionModel()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_API_KEY: "sk-ant-test",
      EXTRACTION_BASE_URL: extraction.model.url,
      EXTRACTION_API_KEY: "sk-extraction",
      EXTRACTION_CONCURRENCY: "1",
      EXTRACTION_RETRY_BASE_MS: "50",
      EXTRACTION_MAX_ATTEMPTS: "2",
      EXTRACTION_MODALITIES: "text,image,file",
      EXTRACTION_ATTACHMENT_MAX_BYTES: String(MAX_BYTES),
      EXTRACTION_ATTACHMENTS_PER_TURN: "3",
      EXTRACTION_ATTACHMENTS_PER_JOB: "2",
      SUMMARY_EVERY_CHANGES: "1000"
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
    await anthropic.close()
    await extraction.model.close()
  })
  beforeEach(() => {
    up.reset()
    anthropic.reset()
  })

  const openai = (user: string) =>
    new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user }
    })

  it("sends a chat turn's image (a data URL) to the extraction model, learns from it, then keeps only its digest", async () => {
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [
      {
        role: "user",
        content: [
          { type: "text", text: "Meet my dog DOG-PHOTO" },
          { type: "image_url", image_url: { url: PNG } }
        ]
      }
    ]
    extraction.reply(
      "DOG-PHOTO",
      modelReply({
        traits: [],
        memories: [
          { content: "The user has a golden retriever", type: "fact", importance: 0.6, source: "a1" },
          { content: "The user is proud of their dog", type: "context", importance: 0.4 }
        ]
      })
    )
    await openai("dog-owner").chat.completions.create({ model: "gpt-test", messages })
    // The provider got the request as the client sent it.
    expect(up.requests[0]!.body!["messages"]).toEqual(messages)

    const job = await finishedJob(gw, "dog-owner")
    expect(job.status).toBe("succeeded")
    expect(job.result).toMatchObject({ attachmentsRead: { images: 1, files: 0 }, notes: [] })
    const [call] = extraction.callsFor("DOG-PHOTO")
    expect(call!.parts).toEqual([
      { type: "text", text: "Attachment a1:" },
      { type: "image_url", image_url: { url: PNG } }
    ])
    expect(call!.data.attachments).toEqual([{ ref: "a1", kind: "image", media_type: "image/png" }])
    expect(call!.data.conversation![0]).toMatchObject({
      content: "Meet my dog DOG-PHOTO\n[image_url]",
      attachments: ["a1"]
    })

    expect(await messagesOf(gw, "dog-owner")).toEqual([
      ["user", "Meet my dog DOG-PHOTO\n[image_url]"],
      ["assistant", "answer 0"]
    ])
    expect(await attachmentsOf(gw, "dog-owner")).toEqual([
      {
        kind: "image",
        mediaType: "image/png",
        filename: null,
        held: false,
        bytes: Buffer.from(PNG_BASE64, "base64").length,
        sha256: sha256(Buffer.from(PNG_BASE64, "base64")),
        extracted: true
      }
    ])
    // As the management API shows them.
    const listed = await gw.request<{ memories: ReadonlyArray<{ content: string; source: string }> }>(
      "GET",
      "/api/profiles/dog-owner/memories"
    )
    expect(
      listed.body.memories
        .map(({ content, source }) => ({ content, source }))
        .sort((a, b) => a.content.localeCompare(b.content))
    ).toEqual([
      { content: "The user has a golden retriever", source: "image" },
      { content: "The user is proud of their dog", source: "text" }
    ])
  })

  it("holds a turn's image while its extraction runs, and lets go of it with the job's writes", async () => {
    let answer: (reply: Reply) => void = () => undefined
    extraction.reply("HOLD-ME", { kind: "later", reply: new Promise<Reply>((resolve) => (answer = resolve)) })
    await openai("holder").chat.completions.create({
      model: "gpt-test",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "HOLD-ME" },
            { type: "image_url", image_url: { url: PNG } }
          ]
        }
      ]
    })
    // The extraction model has the image and has not answered yet.
    await eventually(async () => (extraction.callsFor("HOLD-ME").length > 0 ? true : undefined))
    expect((await attachmentsOf(gw, "holder")).map((row) => [row.held, row.extracted])).toEqual([[true, false]])
    answer(modelReply({ traits: [], memories: [] }))
    expect((await finishedJob(gw, "holder")).status).toBe("succeeded")
    expect((await attachmentsOf(gw, "holder")).map((row) => [row.held, row.extracted])).toEqual([[false, true]])
  })

  it("sends an image given by an https URL as that URL (never fetched), then forgets the URL", async () => {
    await openai("cat-owner").chat.completions.create({
      model: "gpt-test",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "My cat CAT-LINK" },
            { type: "image_url", image_url: { url: CAT_URL, detail: "low" } }
          ]
        }
      ]
    })
    expect((await finishedJob(gw, "cat-owner")).status).toBe("succeeded")
    const [call] = extraction.callsFor("CAT-LINK")
    expect(call!.parts).toEqual([
      { type: "text", text: "Attachment a1:" },
      { type: "image_url", image_url: { url: CAT_URL } }
    ])
    expect(await attachmentsOf(gw, "cat-owner")).toEqual([
      {
        kind: "image",
        mediaType: null,
        filename: null,
        held: false,
        bytes: 0,
        sha256: sha256(CAT_URL),
        extracted: true
      }
    ])
    const [stored] = await gw.query<{ url: string | null }>(
      "SELECT a.url FROM message_attachments a JOIN profiles p ON p.id = a.profile_id WHERE p.external_id = 'cat-owner'"
    )
    expect(stored!.url).toBeNull()
  })

  it("reads a Responses turn's input_image and input_file (a PDF) as an image part and a file part", async () => {
    up.handler = () => ({
      kind: "json",
      status: 200,
      body: {
        id: "resp_1",
        object: "response",
        created_at: 1_700_000_000,
        status: "completed",
        model: "gpt-test",
        output: [
          {
            type: "message",
            id: "msg_1",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Got it.", annotations: [] }]
          }
        ],
        usage: { input_tokens: 10, output_tokens: 3, total_tokens: 13 }
      }
    })
    const input: OpenAI.Responses.ResponseInput = [
      {
        role: "user",
        content: [
          { type: "input_text", text: "My receipt and notes RESPONSES-MEDIA" },
          { type: "input_image", image_url: PNG, detail: "auto" },
          { type: "input_file", filename: "notes.pdf", file_data: PDF }
        ]
      }
    ]
    await openai("responses-user").responses.create({ model: "gpt-test", input })
    expect(up.requests[0]!.body!["input"]).toEqual(input)

    expect((await finishedJob(gw, "responses-user")).status).toBe("succeeded")
    const [call] = extraction.callsFor("RESPONSES-MEDIA")
    expect(call!.parts).toEqual([
      { type: "text", text: "Attachment a1:" },
      { type: "image_url", image_url: { url: PNG } },
      { type: "text", text: "Attachment a2:" },
      { type: "file", file: { filename: "notes.pdf", file_data: PDF } }
    ])
    expect(call!.data.attachments).toEqual([
      { ref: "a1", kind: "image", media_type: "image/png" },
      { ref: "a2", kind: "file", media_type: "application/pdf", filename: "notes.pdf" }
    ])
    expect(await messagesOf(gw, "responses-user")).toEqual([
      ["user", "My receipt and notes RESPONSES-MEDIA\n[input_image]\n[input_file]"],
      ["assistant", "Got it."]
    ])
    const rows = await attachmentsOf(gw, "responses-user")
    expect(rows.map((row) => [row.kind, row.mediaType, row.filename, row.held, row.extracted])).toEqual([
      ["image", "image/png", null, false, true],
      ["file", "application/pdf", "notes.pdf", false, true]
    ])
    expect(rows[1]!.sha256).toBe(sha256(PDF_BYTES))
  })

  it("reads an Anthropic Messages turn's image block and its plain-text document (the text in the JSON)", async () => {
    anthropic.handler = () => ({
      kind: "json",
      status: 200,
      body: anthropicMessage([{ type: "text", text: "Noted." }])
    })
    const messages: Array<Anthropic.MessageParam> = [
      {
        role: "user",
        content: [
          { type: "text", text: "My plate and my allergies ANTHROPIC-MEDIA" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_BASE64 } },
          {
            type: "document",
            title: "allergies.txt",
            source: { type: "text", media_type: "text/plain", data: "Allergic to peanuts." }
          }
        ]
      }
    ]
    await new Anthropic({
      baseURL: gw.baseUrl,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "anthropic-user" }
    }).messages.create({ model: "claude-test", max_tokens: 100, messages })
    expect(anthropic.requests[0]!.body!["messages"]).toEqual(messages)

    expect((await finishedJob(gw, "anthropic-user")).status).toBe("succeeded")
    const [call] = extraction.callsFor("ANTHROPIC-MEDIA")
    expect(call!.parts).toEqual([
      { type: "text", text: "Attachment a1:" },
      { type: "image_url", image_url: { url: PNG } }
    ])
    expect(call!.data.attachments).toEqual([
      { ref: "a1", kind: "image", media_type: "image/png" },
      { ref: "a2", kind: "file", media_type: "text/plain", filename: "allergies.txt", text: "Allergic to peanuts." }
    ])
    expect(call!.data.conversation![0]!.attachments).toEqual(["a1", "a2"])
    expect((await attachmentsOf(gw, "anthropic-user")).map((row) => [row.kind, row.held, row.extracted])).toEqual([
      ["image", false, true],
      ["file", false, true]
    ])
  })

  it("holds nothing of a turn that skips extraction: only the digest is stored", async () => {
    const res = await gw.request("POST", "/v1/chat/completions", {
      json: {
        model: "gpt-test",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "No learning" },
              { type: "image_url", image_url: { url: PNG } }
            ]
          }
        ],
        service: { skipExtraction: true }
      },
      headers: { "x-service-id": "private-user" }
    })
    expect(res.status).toBe(200)
    const rows = await eventually(async () => {
      const found = await attachmentsOf(gw, "private-user")
      return found.length > 0 ? found : undefined
    })
    expect(rows).toEqual([
      expect.objectContaining({ kind: "image", mediaType: "image/png", held: false, extracted: false })
    ])
    expect(
      await gw.query(
        "SELECT 1 FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = 'private-user'"
      )
    ).toEqual([])
  })

  it("holds what the limits allow and says what it did not read: too large, over the turn's and the job's limits", async () => {
    const big = `data:image/png;base64,${Buffer.alloc(MAX_BYTES + 1, 7).toString("base64")}`
    const image = (url: string) => ({ type: "image_url" as const, image_url: { url } })
    await openai("many-images").chat.completions.create({
      model: "gpt-test",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Holiday album LIMITS" },
            image(big),
            image(PNG),
            image(CAT_URL),
            image(PNG),
            image(PNG)
          ]
        }
      ]
    })
    const job = await finishedJob(gw, "many-images")
    expect(job.status).toBe("succeeded")
    expect(job.result!.attachmentsRead).toEqual({ images: 2, files: 0 })
    expect(job.result!.notes).toEqual([
      `1 image not read: larger than EXTRACTION_ATTACHMENT_MAX_BYTES (${MAX_BYTES} bytes)`,
      "1 image not read: more than EXTRACTION_ATTACHMENTS_PER_JOB (2) in one job",
      "1 image not read: more than EXTRACTION_ATTACHMENTS_PER_TURN (3) in one turn"
    ])
    const [call] = extraction.callsFor("LIMITS")
    expect(call!.parts.filter((part) => part["type"] === "image_url")).toEqual([
      { type: "image_url", image_url: { url: PNG } },
      { type: "image_url", image_url: { url: CAT_URL } }
    ])
    const rows = await attachmentsOf(gw, "many-images")
    expect(rows.map((row) => [row.bytes, row.held, row.extracted])).toEqual([
      [MAX_BYTES + 1, false, true],
      [Buffer.from(PNG_BASE64, "base64").length, false, true],
      [0, false, true],
      [Buffer.from(PNG_BASE64, "base64").length, false, true],
      [Buffer.from(PNG_BASE64, "base64").length, false, true]
    ])
  })

  it("lets go of a turn's images once its job has failed for good", async () => {
    await openai("unlucky").chat.completions.create({
      model: "gpt-test",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "FAIL-ME" },
            { type: "image_url", image_url: { url: PNG } }
          ]
        }
      ]
    })
    expect((await finishedJob(gw, "unlucky")).status).toBe("failed")
    const rows = await eventually(async () => {
      const found = await attachmentsOf(gw, "unlucky")
      return found.every((row) => row.extracted) ? found : undefined
    })
    expect(rows.map((row) => [row.kind, row.held])).toEqual([["image", false]])
  })
})

describe("images and files, with an extraction model that takes text only (the default)", () => {
  let gw: TestGateway
  let up: FakeUpstream
  let extraction: Awaited<ReturnType<typeof extractionModel>>
  beforeAll(async () => {
    up = await startFakeUpstream()
    extraction = await extractionModel()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      EXTRACTION_BASE_URL: extraction.model.url,
      EXTRACTION_API_KEY: "sk-extraction",
      EXTRACTION_CONCURRENCY: "1",
      SUMMARY_EVERY_CHANGES: "1000"
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
    await extraction.model.close()
  })

  it("sends no parts, holds nothing, and the job's result says what was not read", async () => {
    await new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "x-service-id": "text-only" }
    }).chat.completions.create({
      model: "gpt-test",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "TEXT-ONLY photo and notes" },
            { type: "image_url", image_url: { url: PNG } },
            { type: "file", file: { filename: "notes.pdf", file_data: PDF } }
          ]
        }
      ]
    })
    const job = await finishedJob(gw, "text-only")
    const [call] = extraction.callsFor("TEXT-ONLY")
    expect(call!.parts).toEqual([])
    expect(call!.data.attachments).toBeUndefined()

    const shown = await gw.request<{ job: { result: JobRow["result"] } }>("GET", `/api/jobs/${job.id}`)
    expect(shown.body.job.result).toMatchObject({
      attachmentsRead: { images: 0, files: 0 },
      notes: [
        "1 image not read: the extraction model takes text only (EXTRACTION_MODALITIES)",
        "1 file not read: the extraction model takes text only (EXTRACTION_MODALITIES)"
      ]
    })
    expect((await attachmentsOf(gw, "text-only")).map((row) => [row.kind, row.mediaType, row.held])).toEqual([
      ["image", "image/png", false],
      ["file", "application/pdf", false]
    ])
  })
})
