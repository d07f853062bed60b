import { Option, Result, Schema } from "effect"
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

export const MemoryCandidate = Schema.Struct({
  content: Schema.Trim.check(Schema.isBetweenLength(1, MAX_EXTRACTED_MEMORY_LENGTH), isStorable),
  type: MemoryType,
  importance: Importance,
  /** Situations in which the memory matters (it is found by them too). */
  cues: Schema.optionalKey(Cues),
  /** When it happened (`YYYY-MM-DD`); checked when the memory is applied. */
  occurred_at: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Refs (`m3`) of known memories it replaces. */
  supersedes: Schema.optionalKey(Schema.Array(Schema.String).check(Schema.isMaxLength(MAX_ITEMS)))
})
export type MemoryCandidate = typeof MemoryCandidate.Type

export interface ExtractionCandidates {
  readonly traits: ReadonlyArray<TraitCandidate>
  readonly memories: ReadonlyArray<MemoryCandidate>
  /** Why items (or the whole reply) were dropped; logged, never stored. */
  readonly dropped: ReadonlyArray<string>
}

const decodeTrait = Schema.decodeUnknownResult(TraitCandidate)
const decodeMemory = Schema.decodeUnknownResult(MemoryCandidate)

/** The reply as a JSON object, its items still unread: each is decoded on its own, so one bad item drops only itself. */
const parseObject = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))
const parseSummary = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Struct({ summary: Schema.String })))

const items = <A>(
  name: string,
  value: unknown,
  decode: (item: unknown) => Result.Result<A, Schema.SchemaError>,
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
    const decoded = decode(item)
    if (Result.isSuccess(decoded)) out.push(decoded.success)
    else {
      const issue = firstIssue(decoded.failure)
      dropped.push(`${name}[${index}]${issue.path.length > 0 ? `.${issue.path.join(".")}` : ""}: ${issue.message}`)
    }
  }
  return out
}

/** Reads the extraction reply item by item: a bad item is dropped, the good ones are kept. */
export const decodeExtraction = (text: string): ExtractionCandidates => {
  const parsed = parseObject(text)
  if (Option.isNone(parsed)) return { traits: [], memories: [], dropped: ["the reply is not a JSON object"] }
  const json = parsed.value
  const dropped: Array<string> = []
  return {
    traits: items("traits", json["traits"], decodeTrait, dropped),
    memories: items("memories", json["memories"], decodeMemory, dropped),
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
  for (const item of items("cues", parsed.value["cues"], decodeCueItem, dropped)) {
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
