import { Predicate, Result } from "effect"
import type { TraitValueType } from "../domain/Trait.ts"
import type { ArrayItemType, TraitDefinition } from "./TraitDefinition.ts"

export const MAX_TRAIT_STRING_LENGTH = 2000
export const MAX_TRAIT_ARRAY_ITEMS = 100
export const MAX_TRAIT_JSON_BYTES = 16 * 1024

/** What a trait is checked against: its definition, or the type it was first stored with. */
export type TraitTyping =
  | { readonly _tag: "Declared"; readonly definition: TraitDefinition }
  | { readonly _tag: "Established"; readonly valueType: TraitValueType }
  | { readonly _tag: "New" }

export interface ValidTraitValue {
  readonly value: unknown
  readonly valueType: TraitValueType
}

const describe = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : `a ${typeof value}`

const checkString = (value: unknown): Result.Result<string, string> => {
  if (!Predicate.isString(value)) return Result.fail(`expected a string, got ${describe(value)}`)
  const trimmed = value.trim()
  if (trimmed === "") return Result.fail("expected a non-empty string")
  if (trimmed.length > MAX_TRAIT_STRING_LENGTH) {
    return Result.fail(`expected at most ${MAX_TRAIT_STRING_LENGTH} characters, got ${trimmed.length}`)
  }
  return Result.succeed(trimmed)
}

const checkScalar = (itemType: ArrayItemType, value: unknown): Result.Result<unknown, string> => {
  switch (itemType) {
    case "string":
      return checkString(value)
    case "number":
      return Predicate.isNumber(value) && Number.isFinite(value)
        ? Result.succeed(value)
        : Result.fail(`expected a finite number, got ${describe(value)}`)
    case "boolean":
      return Predicate.isBoolean(value) ? Result.succeed(value) : Result.fail(`expected a boolean, got ${describe(value)}`)
  }
}

const checkArray = (itemType: ArrayItemType | undefined, value: unknown): Result.Result<Array<unknown>, string> => {
  if (!Array.isArray(value)) return Result.fail(`expected an array, got ${describe(value)}`)
  if (value.length > MAX_TRAIT_ARRAY_ITEMS) {
    return Result.fail(`expected at most ${MAX_TRAIT_ARRAY_ITEMS} items, got ${value.length}`)
  }
  if (itemType === undefined) return Result.succeed(value)
  const items: Array<unknown> = []
  for (const [index, item] of value.entries()) {
    const checked = checkScalar(itemType, item)
    if (Result.isFailure(checked)) return Result.fail(`item ${index}: ${checked.failure}`)
    items.push(checked.success)
  }
  return Result.succeed(items)
}

const checkType = (
  valueType: TraitValueType,
  value: unknown,
  definition: TraitDefinition | undefined
): Result.Result<unknown, string> => {
  switch (valueType) {
    case "string":
      return checkString(value)
    case "number":
    case "boolean":
      return checkScalar(valueType, value)
    case "enum": {
      const allowed = definition?.enumValues ?? []
      return Predicate.isString(value) && allowed.includes(value)
        ? Result.succeed(value)
        : Result.fail(`expected one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`)
    }
    case "array":
      return checkArray(definition?.itemType, value)
    case "object":
      return Predicate.isObject(value) && !Array.isArray(value)
        ? Result.succeed(value)
        : Result.fail(`expected an object, got ${describe(value)}`)
  }
}

const inferType = (value: unknown): Result.Result<TraitValueType, string> => {
  if (Predicate.isString(value)) return Result.succeed("string")
  if (Predicate.isNumber(value)) return Result.succeed("number")
  if (Predicate.isBoolean(value)) return Result.succeed("boolean")
  if (Array.isArray(value)) return Result.succeed("array")
  if (Predicate.isObject(value)) return Result.succeed("object")
  return Result.fail("null is not a trait value (delete the trait instead)")
}

/**
 * Checks a value against the trait's type and normalises it (strings are trimmed).
 * A declared trait follows its definition; an undeclared one keeps the type of its first value.
 */
export const validateTraitValue = (typing: TraitTyping, value: unknown): Result.Result<ValidTraitValue, string> => {
  const valueType = typing._tag === "Declared"
    ? Result.succeed(typing.definition.valueType)
    : typing._tag === "Established"
    ? Result.succeed(typing.valueType)
    : inferType(value)
  if (Result.isFailure(valueType)) return Result.fail(valueType.failure)
  const definition = typing._tag === "Declared" ? typing.definition : undefined
  const checked = checkType(valueType.success, value, definition)
  if (Result.isFailure(checked)) return Result.fail(checked.failure)
  const bytes = Buffer.byteLength(JSON.stringify(checked.success))
  if (bytes > MAX_TRAIT_JSON_BYTES) {
    return Result.fail(`expected at most ${MAX_TRAIT_JSON_BYTES} bytes of JSON, got ${bytes}`)
  }
  return Result.succeed({ value: checked.success, valueType: valueType.success })
}
