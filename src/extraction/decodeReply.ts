import { Option, Result, Schema } from "effect"
import { type AttachmentKind, Modality } from "../domain/Attachment.ts"
import type { MemorySource } from "../domain/Memory.ts"
import { Cues, Importance, MemoryType } from "../domain/Memory.ts"
import { MAX_SUMMARY_LENGTH } from "../domain/Profile.ts"
import { firstIssue } from "../domain/schemaIssues.ts"
import { isStorable, isStorableJsonValue, storableText } from "../domain/storableText.ts"
import { Confidence } from "../domain/Trait.ts"

/** At most this many items of each kind are taken from one reply. */
export const MAX_ITEMS = 25
export const MAX_EXTRACTED_MEMORY_LENGTH = 1000

export const TraitCandidate = Schema.Struct({
  key: Schema.NonEmptyString,
  value: Schema.Json.check(isStorableJsonValue),
  confidence: Confidence
})
export type TraitCandidate = typeof TraitCandidate.Type

/** A memory item of the reply (or of a plugin's contribution), as decoded before its labels are checked. */
export const MemoryItem = Schema.Struct({
  content: Schema.Trim.check(Schema.isBetweenLength(1, MAX_EXTRACTED_MEMORY_LENGTH), isStorable),
  type: MemoryType,
  importance: Importance,
  /** Situations in which the memory matters (it is found by them too). */
  cues: Schema.optionalKey(Cues),
  /** When it happened (`YYYY-MM-DD`); checked when the memory is applied. */
  occurred_at: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Refs (`m3`) of known memories it replaces. */
  supersedes: Schema.optionalKey(Schema.Array(Schema.String).check(Schema.isMaxLength(MAX_ITEMS))),
  /** What it was learned from: `text`, `image`, `file` or an attachment's ref (`a1`); never fails the item. */
  source: Schema.optionalKey(Schema.Unknown),
  /** One of the namespace's memory categories; anything else is dropped, never the item. */
  category: Schema.optionalKey(Schema.Unknown)
})

/** A memory of the reply with its labels checked: `source` absent means the text, `category` absent none. */
export type MemoryCandidate = Omit<typeof MemoryItem.Type, "source" | "category"> & {
  readonly source?: MemorySource
  readonly category?: string
}

/** What a reply's labels are checked against: the job's categories and the attachments it was sent (ref → kind). */
export interface ReplyContext {
  readonly categories: ReadonlySet<string>
  readonly attachments: ReadonlyMap<string, AttachmentKind>
}

const NO_CONTEXT: ReplyContext = { categories: new Set(), attachments: new Map() }

const decodeSourceName = Schema.decodeUnknownOption(Modality)
const decodeText = Schema.decodeUnknownOption(Schema.String)
const decodeTexts = Schema.decodeUnknownOption(Schema.Array(Schema.Unknown))

/**
 * The source a memory names: an attachment's ref (or the first of a list of them) is its kind; `image`
 * or `file` only if the job was sent one of that kind. Anything else is the text.
 */
const sourceOf = (value: unknown, context: ReplyContext): MemorySource => {
  const first = Option.getOrElse(
    Option.flatMap(decodeTexts(value), (list) => Option.fromUndefinedOr(list[0])),
    () => value
  )
  const byRef = Option.flatMap(decodeText(first), (ref) => Option.fromUndefinedOr(context.attachments.get(ref.trim())))
  if (Option.isSome(byRef)) return byRef.value
  const named = Option.getOrElse(decodeSourceName(first), () => "text" as const)
  return named === "text" || [...context.attachments.values()].includes(named) ? named : "text"
}

/** A decoded memory item with its source and category checked; a category not in the list is dropped and noted. */
export const labelMemory = (
  item: typeof MemoryItem.Type,
  context: ReplyContext,
  dropped: Array<string>,
  where: string
): MemoryCandidate => {
  const { source, category, ...memory } = item
  const from = source === undefined ? "text" : sourceOf(source, context)
  let named: string | undefined
  if (category !== undefined && category !== null) {
    const name = Option.getOrUndefined(decodeText(category))?.trim()
    if (name !== undefined && context.categories.has(name)) named = name
    else
      dropped.push(
        `${where}.category: ${JSON.stringify(String(name ?? category).slice(0, 64))} is not one of the categories (kept without one)`
      )
  }
  return {
    ...memory,
    ...(from === "text" ? {} : { source: from }),
    ...(named === undefined ? {} : { category: named })
  }
}

export interface ExtractionCandidates {
  readonly traits: ReadonlyArray<TraitCandidate>
  readonly memories: ReadonlyArray<MemoryCandidate>
  /** Why items (or the whole reply) were dropped; logged, never stored. */
  readonly dropped: ReadonlyArray<string>
}

const decodeTrait = Schema.decodeUnknownResult(TraitCandidate)
const decodeMemory = Schema.decodeUnknownResult(MemoryItem)

/** The reply as a JSON object, its items still unread: each is decoded on its own, so one bad item drops only itself. */
const parseObject = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))
const parseSummary = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Struct({ summary: Schema.String })))

const items = <A>(
  name: string,
  value: unknown,
  decode: (item: unknown, index: number) => Result.Result<A, Schema.SchemaError>,
  dropped: Array<string>
): Array<A> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) {
    dropped.push(`${name}: not an array`)
    return []
  }
  const out: Array<A> = []
  for (const [index, item] of value.entries()) {
    if (out.length === MAX_ITEMS) {
      dropped.push(`${name}: more than ${MAX_ITEMS} items`)
      break
    }
    const decoded = decode(item, index)
    if (Result.isSuccess(decoded)) out.push(decoded.success)
    else {
      const issue = firstIssue(decoded.failure)
      dropped.push(`${name}[${index}]${issue.path.length > 0 ? `.${issue.path.join(".")}` : ""}: ${issue.message}`)
    }
  }
  return out
}

/**
 * Reads the extraction reply item by item: a bad item is dropped, the good ones are kept; a memory's
 * source and category are checked against `context` (a wrong one is dropped, not the memory).
 */
export const decodeExtraction = (text: string, context: ReplyContext = NO_CONTEXT): ExtractionCandidates => {
  const parsed = parseObject(text)
  if (Option.isNone(parsed)) return { traits: [], memories: [], dropped: ["the reply is not a JSON object"] }
  const json = parsed.value
  const dropped: Array<string> = []
  return {
    traits: items("traits", json["traits"], (item) => decodeTrait(item), dropped),
    memories: items(
      "memories",
      json["memories"],
      (item, index) =>
        Result.map(decodeMemory(item), (memory) => labelMemory(memory, context, dropped, `memories[${index}]`)),
      dropped
    ),
    dropped
  }
}

const decodeCueItem = Schema.decodeUnknownResult(Schema.Struct({ ref: Schema.String, cues: Cues }))

/** The cue writer's reply: cues by ref, for the refs asked about only; a bad item is dropped, the good ones kept. */
export const decodeCueReply = (
  text: string,
  refs: ReadonlySet<string>
): {
  readonly cues: ReadonlyMap<string, ReadonlyArray<string>>
  readonly dropped: ReadonlyArray<string>
} => {
  const parsed = parseObject(text)
  if (Option.isNone(parsed)) return { cues: new Map(), dropped: ["the reply is not a JSON object"] }
  const dropped: Array<string> = []
  const cues = new Map<string, ReadonlyArray<string>>()
  for (const item of items("cues", parsed.value["cues"], (item) => decodeCueItem(item), dropped)) {
    if (refs.has(item.ref)) cues.set(item.ref, item.cues)
    else dropped.push(`cues: no memory has the ref ${JSON.stringify(item.ref.slice(0, 20))}`)
  }
  return { cues, dropped }
}

/** The summary of a summary reply, if it has a usable one. */
export const decodeSummary = (text: string): Option.Option<string> =>
  Option.flatMap(parseSummary(text), ({ summary }) => {
    const trimmed = summary.trim()
    return trimmed === "" ? Option.none() : Option.some(storableText(trimmed.slice(0, MAX_SUMMARY_LENGTH)))
  })
