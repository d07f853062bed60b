import { Schema } from "effect"
import { MemoryType } from "./Memory.ts"
import { isStorable, isStorableJsonValue } from "./storableText.ts"
import { TraitKey, TraitValueType } from "./Trait.ts"
import { declarationFields } from "./TraitDeclaration.ts"
import { TraitSchemaFile } from "./TraitSchemaFile.ts"

/**
 * How one app (namespace) wants its users' turns learned from and kept: its own extraction
 * instructions, memory categories and trait schema, and its retention. A namespace that set none
 * uses the gateway's defaults (`defaultNamespaceSettings`).
 */

export const MAX_INSTRUCTIONS_LENGTH = 4000
const MAX_CATEGORIES = 50
const MAX_TRAIT_KEYS = 100
/** A hundred years: longer is "keep forever", which is no policy at all. */
const MAX_DAYS = 36_500

/** A memory category's name, as memories carry it in `category`: 1–64 letters, digits or `_ . : / -`. */
export const CategoryName = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.:/-]{1,64}$/))

export const MemoryCategory = Schema.Struct({
  name: CategoryName,
  /** What belongs in it, for the extraction model. */
  description: Schema.String.check(Schema.isMaxLength(500), isStorable)
})
export type MemoryCategory = typeof MemoryCategory.Type

const Days = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_DAYS }))

/** Days a memory of each type lives after it is written; a type left out lives until deleted. */
export const MemoryDays = Schema.Record(Schema.String, Days).check(
  Schema.makeFilter(
    (days: Readonly<Record<string, number>>) =>
      Object.keys(days).every((type) => (MemoryType.literals as ReadonlyArray<string>).includes(type)),
    { expected: `memory types as keys (${MemoryType.literals.join(", ")})` }
  )
)
export type MemoryDays = typeof MemoryDays.Type

export const RetentionPolicy = Schema.Struct({
  /** Days recorded turns (with their stored responses and thread turns) are kept; absent: kept. */
  turnsDays: Schema.optionalKey(Days),
  memoryDays: Schema.optionalKey(MemoryDays)
})
export type RetentionPolicy = typeof RetentionPolicy.Type

/**
 * A trait schema in `TRAITS_FILE`'s form, for one namespace: replaces the gateway's for its users. Its
 * free text is bounded, as a per-request declaration's (a namespace's admin sets it, and it goes into
 * every extraction prompt of the namespace), and storable.
 */
export const NamespaceTraitSchema = Schema.Record(
  TraitKey,
  Schema.Struct({
    type: TraitValueType,
    ...declarationFields({
      text: Schema.String.check(Schema.isMaxLength(1000)),
      name: Schema.NonEmptyString.check(Schema.isMaxLength(64))
    })
  })
).check(
  Schema.makeFilter((schema: Readonly<Record<string, unknown>>) => Object.keys(schema).length <= MAX_TRAIT_KEYS, {
    expected: `at most ${MAX_TRAIT_KEYS} traits`
  }),
  isStorableJsonValue
)

/** What `PUT /api/namespaces/{name}/settings` takes (every field replaced; absent: the default). */
export const NamespaceSettingsInput = Schema.Struct({
  extractionInstructions: Schema.optionalKey(
    Schema.String.check(Schema.isMaxLength(MAX_INSTRUCTIONS_LENGTH), isStorable)
  ),
  memoryCategories: Schema.optionalKey(
    Schema.Array(MemoryCategory)
      .check(Schema.isMaxLength(MAX_CATEGORIES))
      .check(
        Schema.makeFilter(
          (categories: ReadonlyArray<MemoryCategory>) =>
            new Set(categories.map((category) => category.name)).size === categories.length,
          { expected: "categories with distinct names" }
        )
      )
  ),
  /** `null`: the gateway's trait schema. */
  traitSchema: Schema.optionalKey(Schema.NullOr(NamespaceTraitSchema)),
  retention: Schema.optionalKey(RetentionPolicy)
})
export type NamespaceSettingsInput = typeof NamespaceSettingsInput.Type

/** What the latest retention sweep removed in a namespace. */
export const SweepReport = Schema.Struct({
  at: Schema.String,
  memories: Schema.Int,
  turns: Schema.Int,
  responses: Schema.Int
})
export type SweepReport = typeof SweepReport.Type

export const NamespaceSettings = Schema.Struct({
  namespace: Schema.String,
  extractionInstructions: Schema.String,
  memoryCategories: Schema.Array(MemoryCategory),
  traitSchema: Schema.NullOr(TraitSchemaFile),
  retention: RetentionPolicy,
  /** The latest sweep that removed something; `null`: none yet. */
  lastSweep: Schema.NullOr(SweepReport),
  /** `null`: never set (the defaults). */
  updatedAt: Schema.NullOr(Schema.String)
})
export type NamespaceSettings = typeof NamespaceSettings.Type

export const defaultNamespaceSettings = (namespace: string): NamespaceSettings => ({
  namespace,
  extractionInstructions: "",
  memoryCategories: [],
  traitSchema: null,
  retention: {},
  lastSweep: null,
  updatedAt: null
})
