import { Predicate, Result } from "effect"
import type { TraitDefinition } from "../../domain/TraitDefinition.ts"
import type { ValueType } from "../Plugin.ts"

export const MAX_TRAIT_STRING_LENGTH = 2000
export const MAX_TRAIT_ARRAY_ITEMS = 100

const describe = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "an array"
      : typeof value === "object"
        ? "an object"
        : `a ${typeof value}`

const checkString = (value: unknown): Result.Result<string, string> => {
  if (!Predicate.isString(value)) return Result.fail(`expected a string, got ${describe(value)}`)
  const trimmed = value.trim()
  if (trimmed === "") return Result.fail("expected a non-empty string")
  if (trimmed.length > MAX_TRAIT_STRING_LENGTH) {
    return Result.fail(`expected at most ${MAX_TRAIT_STRING_LENGTH} characters, got ${trimmed.length}`)
  }
  return Result.succeed(trimmed)
}

const checkNumber = (value: unknown): Result.Result<number, string> =>
  Predicate.isNumber(value) && Number.isFinite(value)
    ? Result.succeed(value)
    : Result.fail(`expected a finite number, got ${describe(value)}`)

const checkBoolean = (value: unknown): Result.Result<boolean, string> =>
  Predicate.isBoolean(value) ? Result.succeed(value) : Result.fail(`expected a boolean, got ${describe(value)}`)

const itemCheck = { string: checkString, number: checkNumber, boolean: checkBoolean } as const

const checkArray = (value: unknown, definition: TraitDefinition | undefined): Result.Result<Array<unknown>, string> => {
  if (!Array.isArray(value)) return Result.fail(`expected an array, got ${describe(value)}`)
  if (value.length > MAX_TRAIT_ARRAY_ITEMS) {
    return Result.fail(`expected at most ${MAX_TRAIT_ARRAY_ITEMS} items, got ${value.length}`)
  }
  // An undeclared array keeps whatever JSON items it has; a declared one checks its item type.
  if (definition === undefined) return Result.succeed(value)
  const check: (item: unknown) => Result.Result<unknown, string> = itemCheck[definition.itemType]
  const items: Array<unknown> = []
  for (const [index, item] of value.entries()) {
    const checked = check(item)
    if (Result.isFailure(checked)) return Result.fail(`item ${index}: ${checked.failure}`)
    items.push(checked.success)
  }
  return Result.succeed(items)
}

const renderScalar = (value: unknown) => String(value)

/** The value types every gateway has, provided by the built-in `core` plugin. */
export const builtinValueTypes: ReadonlyArray<ValueType> = [
  { name: "string", validate: checkString, render: renderScalar, infers: Predicate.isString },
  { name: "number", validate: checkNumber, render: renderScalar, infers: Predicate.isNumber },
  { name: "boolean", validate: checkBoolean, render: renderScalar, infers: Predicate.isBoolean },
  {
    name: "enum",
    validate: (value, definition) => {
      const allowed = definition?.enumValues ?? []
      return Predicate.isString(value) && allowed.includes(value)
        ? Result.succeed(value)
        : Result.fail(`expected one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`)
    },
    render: renderScalar
  },
  {
    name: "array",
    validate: checkArray,
    render: (value) =>
      Array.isArray(value)
        ? value.map((item) => (Predicate.isString(item) ? item : JSON.stringify(item))).join(", ")
        : String(value),
    infers: Array.isArray
  },
  {
    name: "object",
    validate: (value) =>
      Predicate.isObject(value) && !Array.isArray(value)
        ? Result.succeed(value)
        : Result.fail(`expected an object, got ${describe(value)}`),
    render: (value) => JSON.stringify(value),
    infers: (value) => Predicate.isObject(value) && !Array.isArray(value)
  }
]
