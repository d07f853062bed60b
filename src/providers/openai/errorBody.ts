import { Schema } from "effect"

/** An error body as OpenAI (`{error: {...}}`), Anthropic (`{type: "error", error: {...}}`) or a plain `{error: "…"}` sends it. */
export const ErrorBody = Schema.Struct({
  error: Schema.Union([
    Schema.String,
    Schema.Struct({
      message: Schema.optionalKey(Schema.NullOr(Schema.String)),
      type: Schema.optionalKey(Schema.NullOr(Schema.String)),
      code: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.String, Schema.Number]))),
      param: Schema.optionalKey(Schema.NullOr(Schema.String))
    })
  ])
})
export type ErrorBody = typeof ErrorBody.Type
