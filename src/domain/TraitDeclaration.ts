import { Schema } from "effect"
import type { TraitValueType } from "./Trait.ts"
import { ArrayItemType, CUSTOM_CATEGORY, TraitDefinition } from "./TraitDefinition.ts"

/**
 * How a trait is declared, in `TRAITS_FILE` and per request alike: its value type (named `type` in
 * the file, `valueType` per request) and these optional parts. Each form states its own bounds on
 * free text (`text`) and on names (`name`: category, behaviour); `TraitSchemaFile.ts` and
 * `PerRequestTrait.ts` build the two forms from these fields.
 */
export const declarationFields = (bounds: { readonly text: Schema.String; readonly name: Schema.String }) => ({
  /** The allowed values of an enum trait. */
  enum: Schema.optionalKey(Schema.Array(Schema.NonEmptyString).check(Schema.isMinLength(1))),
  /** The item type of an array trait. */
  items: Schema.optionalKey(Schema.Struct({ type: ArrayItemType })),
  description: Schema.optionalKey(bounds.text),
  category: Schema.optionalKey(bounds.name),
  extraction: Schema.optionalKey(Schema.Struct({ enabled: Schema.Boolean })),
  injection: Schema.optionalKey(
    Schema.Struct({
      enabled: Schema.optionalKey(Schema.Boolean),
      template: Schema.optionalKey(bounds.text)
    })
  ),
  /** A plugin that extracts this trait instead of the model (e.g. `nps`). */
  behaviour: Schema.optionalKey(bounds.name)
})

/** The optional parts of a declaration, in either form. */
export type TraitDeclaration = Schema.Struct.Type<ReturnType<typeof declarationFields>>

/**
 * The one conversion of a declaration into a definition. A part the declaration leaves out comes
 * from `inherited` (the configured definition a per-request declaration overrides), else its default.
 */
export const toDefinition = (
  key: string,
  valueType: TraitValueType,
  declared: TraitDeclaration,
  inherited?: TraitDefinition | undefined
): TraitDefinition =>
  new TraitDefinition({
    key,
    valueType,
    enumValues: declared.enum ?? inherited?.enumValues ?? [],
    itemType: declared.items?.type ?? inherited?.itemType ?? "string",
    category: declared.category ?? inherited?.category ?? CUSTOM_CATEGORY,
    description: declared.description ?? inherited?.description ?? "",
    extractionEnabled: declared.extraction?.enabled ?? inherited?.extractionEnabled ?? true,
    injectionEnabled: declared.injection?.enabled ?? inherited?.injectionEnabled ?? true,
    injectionTemplate: declared.injection?.template ?? inherited?.injectionTemplate ?? `${key}: {{value}}`,
    behaviour: declared.behaviour ?? inherited?.behaviour ?? null
  })
