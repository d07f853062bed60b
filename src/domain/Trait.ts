import { Schema } from "effect"

/**
 * The name of a trait value type: a built-in one (string, number, boolean, enum, array, object) or
 * one a plugin adds. Which names exist is known once plugins are loaded.
 */
export const TraitValueType = Schema.String.check(
  Schema.isPattern(/^[a-z][a-z0-9_-]{0,31}$/, { expected: "a value type name such as string, enum or array" })
)
export type TraitValueType = typeof TraitValueType.Type

export const TraitSource = Schema.Literals(["manual", "extracted"])
export type TraitSource = typeof TraitSource.Type

export const Confidence = Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))

/** Trait keys are identifiers: they appear in URLs, prompts and templates. */
export const TraitKey = Schema.String.check(
  Schema.isPattern(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, {
    expected: "a key of 1 to 64 characters: a letter, then letters, digits, '_', '.' or '-'"
  })
)

export class Trait extends Schema.Class<Trait>("Trait")({
  key: Schema.String,
  value: Schema.Json,
  valueType: TraitValueType,
  category: Schema.String,
  confidence: Schema.Finite,
  source: TraitSource,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate
}) {}
