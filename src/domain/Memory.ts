import { Schema } from "effect"

export const MemoryId = Schema.String.pipe(Schema.brand("MemoryId"))
export type MemoryId = typeof MemoryId.Type

export const MemoryType = Schema.Literals(["fact", "preference", "event", "context"])
export type MemoryType = typeof MemoryType.Type

export const Importance = Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))

export const MAX_MEMORY_LENGTH = 4000

export class Memory extends Schema.Class<Memory>("Memory")({
  id: MemoryId,
  content: Schema.String,
  type: MemoryType,
  importance: Schema.Number,
  decayFactor: Schema.Number,
  createdAt: Schema.DateTimeUtcFromDate,
  lastAccessedAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
}) {}

/** The short form listed as `recentMemories` in a single-profile read. */
export class RecentMemory extends Schema.Class<RecentMemory>("RecentMemory")({
  id: MemoryId,
  content: Schema.String,
  type: MemoryType,
  importance: Schema.Number,
  createdAt: Schema.DateTimeUtcFromDate
}) {}
