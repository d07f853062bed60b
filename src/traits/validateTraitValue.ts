import { Result } from "effect"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import type { ValueType } from "../plugins/Plugin.ts"

export const MAX_TRAIT_JSON_BYTES = 16 * 1024

/** What a trait is checked against: its definition, or the type it was first stored with. */
export type TraitTyping =
  | { readonly _tag: "Declared"; readonly definition: TraitDefinition }
  | { readonly _tag: "Established"; readonly valueType: string }
  | { readonly _tag: "New" }

export interface ValidTraitValue {
  readonly value: unknown
  readonly valueType: string
}

/**
 * Checks a value against the trait's type and normalises it (strings are trimmed).
 * A declared trait follows its definition; an undeclared one keeps the type of its first value,
 * inferred among the value types that can recognise values.
 */
export const validateTraitValue = (
  valueTypes: ReadonlyMap<string, ValueType>,
  typing: TraitTyping,
  value: unknown
): Result.Result<ValidTraitValue, string> => {
  if (value === null) return Result.fail("null is not a trait value (delete the trait instead)")
  const typeName =
    typing._tag === "Declared"
      ? typing.definition.valueType
      : typing._tag === "Established"
        ? typing.valueType
        : [...valueTypes.values()].find((type) => type.infers?.(value) === true)?.name
  if (typeName === undefined) return Result.fail("no value type accepts this value")
  const valueType = valueTypes.get(typeName)
  if (valueType === undefined) return Result.fail(`the value type '${typeName}' is not available`)
  const definition = typing._tag === "Declared" ? typing.definition : undefined
  const checked = valueType.validate(value, definition)
  if (Result.isFailure(checked)) return Result.fail(checked.failure)
  const bytes = Buffer.byteLength(JSON.stringify(checked.success))
  if (bytes > MAX_TRAIT_JSON_BYTES) {
    return Result.fail(`expected at most ${MAX_TRAIT_JSON_BYTES} bytes of JSON, got ${bytes}`)
  }
  return Result.succeed({ value: checked.success, valueType: typeName })
}
