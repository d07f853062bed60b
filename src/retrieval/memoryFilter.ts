import { Schema } from "effect"
import { MemoryTag, MetadataValue } from "../domain/Memory.ts"
import { CategoryName } from "../domain/NamespaceSettings.ts"
import type { CandidateMemory } from "./MemoryIndex.ts"

/**
 * Which memories a request (`service.memoryFilter`) or a search (`filter`) may use, by the app's own
 * labels: any of `tags.any`, all of `tags.all`, every `metadata` field equal, and one of `categories`
 * (the namespace's memory categories). Absent parts match all.
 */
export const MemoryFilter = Schema.Struct({
  tags: Schema.optionalKey(
    Schema.Struct({
      any: Schema.optionalKey(Schema.Array(MemoryTag).check(Schema.isMaxLength(20))),
      all: Schema.optionalKey(Schema.Array(MemoryTag).check(Schema.isMaxLength(20)))
    })
  ),
  metadata: Schema.optionalKey(Schema.Record(Schema.String, MetadataValue)),
  categories: Schema.optionalKey(Schema.Array(CategoryName).check(Schema.isMaxLength(50)))
})
export type MemoryFilter = typeof MemoryFilter.Type

/** The filter as a test on a memory; `undefined` when it lets everything through. */
export const memoryPredicate = (
  filter: MemoryFilter | undefined
): ((memory: CandidateMemory) => boolean) | undefined => {
  if (filter === undefined) return undefined
  const oneOf = filter.tags?.any ?? []
  const everyOf = filter.tags?.all ?? []
  const fields = Object.entries(filter.metadata ?? {})
  const categories = filter.categories ?? []
  if (oneOf.length === 0 && everyOf.length === 0 && fields.length === 0 && categories.length === 0) return undefined
  return (memory) => {
    if (categories.length > 0 && !categories.includes(memory.category ?? "")) return false
    const tags = memory.tags ?? []
    if (oneOf.length > 0 && !oneOf.some((tag) => tags.includes(tag))) return false
    if (!everyOf.every((tag) => tags.includes(tag))) return false
    return fields.every(([key, value]) => memory.metadata?.[key] === value)
  }
}
