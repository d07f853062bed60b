import { MEMORY_TYPES, type MemoryType } from "../../api.ts"

/**
 * A namespace's settings (`/api/namespaces/{name}/settings`) as the API answers them, and as the Settings
 * page edits them: a form of text fields, turned back into what `PUT` takes (the whole of them).
 */

export const MAX_INSTRUCTIONS_LENGTH = 4000
export const MAX_DESCRIPTION_LENGTH = 500
export const MAX_DAYS = 36_500

export interface MemoryCategory {
  readonly name: string
  readonly description: string
}

export interface Retention {
  /** Days recorded turns are kept; absent: kept. */
  readonly turnsDays?: number
  /** Days a memory of each type lives; a type left out lives until deleted. */
  readonly memoryDays?: Readonly<Partial<Record<MemoryType, number>>>
}

/** What the latest retention sweep removed. */
export interface RetentionSweep {
  readonly at: string
  readonly memories: number
  readonly turns: number
  readonly responses: number
}

export interface NamespaceSettings {
  readonly namespace: string
  readonly extractionInstructions: string
  readonly memoryCategories: ReadonlyArray<MemoryCategory>
  /** `null`: the gateway's trait schema. */
  readonly traitSchema: Readonly<Record<string, unknown>> | null
  readonly retention: Retention
  /** `null`: no sweep has removed anything yet. */
  readonly lastSweep: RetentionSweep | null
  /** `null`: never set (the defaults). */
  readonly updatedAt: string | null
}

export const settingsPath = (namespace: string) => `/api/namespaces/${encodeURIComponent(namespace)}/settings`

/** A category's row in the form; `row` tells rows apart while they are added and removed. */
export interface CategoryRow extends MemoryCategory {
  readonly row: number
}

/** The form: every field as typed (numbers too: empty means none). */
export interface SettingsForm {
  readonly instructions: string
  readonly categories: ReadonlyArray<CategoryRow>
  /** JSON; empty (or `null`): the gateway's schema. */
  readonly traitSchema: string
  readonly turnsDays: string
  readonly memoryDays: Readonly<Record<MemoryType, string>>
}

let rows = 0
/** A new row's identity, unique in the page. */
export const nextRow = (): number => ++rows

const days = (n: number | undefined) => (n === undefined ? "" : String(n))

export const toForm = (settings: NamespaceSettings): SettingsForm => ({
  instructions: settings.extractionInstructions,
  categories: settings.memoryCategories.map((category) => ({ ...category, row: nextRow() })),
  traitSchema: settings.traitSchema === null ? "" : JSON.stringify(settings.traitSchema, null, 2),
  turnsDays: days(settings.retention.turnsDays),
  memoryDays: Object.fromEntries(
    MEMORY_TYPES.map((type) => [type, days(settings.retention.memoryDays?.[type])])
  ) as Record<MemoryType, string>
})

/** What the form cannot send, said as the API says its own refusals (`param`: the field). */
export interface Problem {
  readonly message: string
  readonly param: string | null
}

/** The trait schema typed: `null` when empty, else a JSON object; a problem otherwise (nothing is sent). */
const traitSchemaOf = (text: string): { readonly schema: Record<string, unknown> | null } | Problem => {
  const trimmed = text.trim()
  if (trimmed === "" || trimmed === "null") return { schema: null }
  let parsed: unknown
  try {
    parsed = JSON.parse(trimmed)
  } catch (failure) {
    return { message: `The trait schema is not valid JSON: ${(failure as Error).message}`, param: "traitSchema" }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return {
      message:
        "The trait schema must be a JSON object of trait keys and their definitions, or empty for the gateway's schema.",
      param: "traitSchema"
    }
  return { schema: parsed as Record<string, unknown> }
}

/** What `PUT` takes for the form: every field (an empty one is its default); a problem if the form cannot be sent. */
export const toPayload = (form: SettingsForm): { readonly payload: Record<string, unknown> } | Problem => {
  const traitSchema = traitSchemaOf(form.traitSchema)
  if ("message" in traitSchema) return traitSchema
  const memoryDays = Object.fromEntries(
    MEMORY_TYPES.filter((type) => form.memoryDays[type].trim() !== "").map((type) => [
      type,
      Number(form.memoryDays[type])
    ])
  )
  return {
    payload: {
      extractionInstructions: form.instructions,
      memoryCategories: form.categories.map(({ name, description }) => ({
        name: name.trim(),
        description: description.trim()
      })),
      traitSchema: traitSchema.schema,
      retention: {
        ...(form.turnsDays.trim() === "" ? {} : { turnsDays: Number(form.turnsDays) }),
        ...(Object.keys(memoryDays).length === 0 ? {} : { memoryDays })
      }
    }
  }
}

/** The ids of the form's fields, which a refusal's `param` is matched to. */
export const FIELD = {
  instructions: "settings-instructions",
  categories: "settings-categories",
  categoryName: (index: number) => `settings-category-name-${index}`,
  categoryDescription: (index: number) => `settings-category-description-${index}`,
  traitSchema: "settings-trait-schema",
  retention: "settings-retention",
  turnsDays: "settings-turns-days",
  memoryDays: (type: MemoryType) => `settings-memory-days-${type}`,
  /** Where the refusal is said, which the field it names points to. */
  error: "settings-error"
} as const

/**
 * The field a refusal names (`param`: `memoryCategories.1.name`, `retention.memoryDays.event`, …): its id, or
 * the id of the group it is in when the API names no single field; `null`: none.
 */
export const fieldOf = (param: string | null): string | null => {
  if (param === null) return null
  const [field, first, second] = param.split(".")
  switch (field) {
    case "extractionInstructions":
      return FIELD.instructions
    case "memoryCategories": {
      const index = Number(first)
      if (first === undefined || !Number.isInteger(index)) return FIELD.categories
      return second === "description" ? FIELD.categoryDescription(index) : FIELD.categoryName(index)
    }
    case "traitSchema":
      return FIELD.traitSchema
    case "retention":
      if (first === "turnsDays") return FIELD.turnsDays
      if (first === "memoryDays" && (MEMORY_TYPES as ReadonlyArray<string>).includes(second ?? ""))
        return FIELD.memoryDays(second as MemoryType)
      return FIELD.retention
    default:
      return null
  }
}

/** The attributes of a field the refusal names (or not): marked invalid, and described by the refusal. */
export const invalidIf = (invalid: string | null, id: string, hint?: string) => ({
  id,
  "aria-invalid": invalid === id ? ("true" as const) : undefined,
  "aria-describedby": [invalid === id ? FIELD.error : undefined, hint].filter(Boolean).join(" ") || undefined
})
