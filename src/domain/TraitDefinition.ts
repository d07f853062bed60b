import { Schema } from "effect"
import { TraitValueType } from "./Trait.ts"

export const ArrayItemType = Schema.Literals(["string", "number", "boolean"])
export type ArrayItemType = typeof ArrayItemType.Type

/** How one trait is typed, categorised, extracted and injected. */
export class TraitDefinition extends Schema.Class<TraitDefinition>("TraitDefinition")({
  key: Schema.String,
  valueType: TraitValueType,
  /** Allowed values when `valueType` is `enum`. */
  enumValues: Schema.Array(Schema.String),
  /** Item type when `valueType` is `array`. */
  itemType: ArrayItemType,
  category: Schema.String,
  description: Schema.String,
  extractionEnabled: Schema.Boolean,
  injectionEnabled: Schema.Boolean,
  /** `{{value}}` is replaced by the rendered value wherever it appears. */
  injectionTemplate: Schema.String,
  /** The plugin that extracts this trait instead of the model. */
  behaviour: Schema.NullOr(Schema.String)
}) {}

/** Category given to keys that no trait schema declares. */
export const CUSTOM_CATEGORY = "custom"
