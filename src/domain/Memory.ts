import { Schema, SchemaGetter } from "effect"
import { isStorable } from "./storableText.ts"

export const MemoryId = Schema.String.pipe(Schema.brand("MemoryId"))
export type MemoryId = typeof MemoryId.Type

export const MemoryType = Schema.Literals(["fact", "preference", "event", "context"])
export type MemoryType = typeof MemoryType.Type

export const Importance = Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))

/**
 * Importance as answers show it: to 4 decimals. Stored importance carries the noise of float
 * arithmetic (a reinforcement adds 0.1, and 0.7 + 0.1 is 0.7999999999999999); it is rounded only
 * when encoded, so ranking (in SQL and in the process, on decoded values) reads it as stored.
 */
export const roundImportance = (importance: number): number => Math.round(importance * 10_000) / 10_000

const ShownImportance = Schema.Finite.pipe(
  Schema.decodeTo(Schema.Finite, {
    decode: SchemaGetter.passthrough(),
    encode: SchemaGetter.transform(roundImportance)
  })
)

export const MAX_MEMORY_LENGTH = 4000

/** A memory's text as callers write it (the API, MCP): trimmed, 1–4000 characters, storable. */
export const MemoryContent = Schema.Trim.check(Schema.isBetweenLength(1, MAX_MEMORY_LENGTH), isStorable)

/** The importance of a memory written without one. */
export const DEFAULT_IMPORTANCE = 0.5

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** Milliseconds of an ISO 8601 date (`2026-03-14`, midnight UTC) or date-time (no zone: UTC); NaN if it is neither. */
export const instantOf = (text: string): number => {
  const match = ISO_INSTANT.exec(text)
  if (match === null) return Number.NaN
  const [year, month, day] = text.slice(0, 10).split("-").map(Number) as [number, number, number]
  const date = new Date(Date.UTC(year, month - 1, day))
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return Number.NaN
  const zoned = match[1] === undefined ? `${text.slice(0, 10)}T00:00:00Z` : match[3] === undefined ? `${text}Z` : text
  return Date.parse(zoned.replace(" ", "T"))
}

/** Cues as callers and the extraction model give them: a few short phrases. */
const MAX_CUES = 12
export const Cues = Schema.Array(Schema.Trim.check(Schema.isBetweenLength(1, 80), isStorable)).check(
  Schema.isMaxLength(MAX_CUES)
)

/** An app's own labels on a memory: up to 20, each 1–64 letters, digits or `_ . : / -`. */
export const MAX_TAGS = 20
export const MemoryTag = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.:/-]{1,64}$/))
export const MemoryTags = Schema.Array(MemoryTag).check(Schema.isMaxLength(MAX_TAGS))

/** A metadata value: a string (≤ 256 characters, storable), a finite number or a boolean. */
export const MetadataValue = Schema.Union([
  Schema.String.check(Schema.isMaxLength(256), isStorable),
  Schema.Finite,
  Schema.Boolean
])
export type MetadataValue = typeof MetadataValue.Type

/** An app's own fields on a memory: up to 20 keys of scalar values. */
export const MAX_METADATA_KEYS = 20
const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,64}$/

// The keys are checked by a filter, not by the record's key schema: a key that fails a record's key
// schema is dropped without an error, so `{"bad key!": 1}` would clear the metadata it was meant to set.
export const MemoryMetadata = Schema.Record(Schema.String, MetadataValue).check(
  Schema.makeFilter(
    (record: Readonly<Record<string, unknown>>) => Object.keys(record).every((key) => METADATA_KEY.test(key)),
    { expected: "keys of 1–64 letters, digits or `_ . : -`" }
  ),
  Schema.makeFilter((record: Readonly<Record<string, unknown>>) => Object.keys(record).length <= MAX_METADATA_KEYS, {
    expected: `at most ${MAX_METADATA_KEYS} keys`
  })
)
export type MemoryMetadata = typeof MemoryMetadata.Type

/** A point in time as callers write it: an ISO 8601 date or date-time. */
export const IsoInstant = Schema.String.check(
  Schema.makeFilter((text: string) => Number.isFinite(instantOf(text)), {
    expected: "an ISO 8601 date or date-time, e.g. 2026-03-14 or 2026-03-14T09:30:00Z"
  })
)

export const MemorySource = Schema.Literals(["text", "image", "file"])
export type MemorySource = typeof MemorySource.Type

export class Memory extends Schema.Class<Memory>("Memory")({
  id: MemoryId,
  content: Schema.String,
  type: MemoryType,
  importance: ShownImportance,
  /** As of the read: the stored base factor, decayed by the rule in `domain/memoryDecay.ts`. */
  decayFactor: Schema.Finite,
  createdAt: Schema.DateTimeUtcFromDate,
  lastAccessedAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  /** Situations and topics in which the memory matters: it is found by them too. */
  cues: Schema.Array(Schema.String),
  /** When the remembered thing happened (events), as far as it is known. */
  occurredAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  /** The newer memory that replaced this one: it is kept, but never injected. */
  supersededBy: Schema.NullOr(MemoryId),
  /** The app's own labels, to filter what is injected and searched. */
  tags: Schema.Array(Schema.String),
  /** The app's own fields (scalar values), likewise. */
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  /** One of its namespace's memory categories (`/api/namespaces/{name}/settings`), if any. */
  category: Schema.NullOr(Schema.String),
  /** What it was learned from: the text of a turn (or a caller), or an image or file the user shared. */
  source: MemorySource,
  /** When the retention sweep removes it: set by a caller, or by its namespace's policy for its type. */
  expiresAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
}) {}

/** The short form listed as `recentMemories` in a single-profile read. */
export class RecentMemory extends Schema.Class<RecentMemory>("RecentMemory")({
  id: MemoryId,
  content: Schema.String,
  type: MemoryType,
  importance: ShownImportance,
  createdAt: Schema.DateTimeUtcFromDate
}) {}
