import { type Schema, SchemaIssue } from "effect"

export interface FirstIssue {
  /** Path of the offending value, e.g. `["messages", "0", "role"]`; empty for the whole input. */
  readonly path: ReadonlyArray<string>
  readonly message: string
  /** A required key is absent (as opposed to present with a bad value). */
  readonly missing: boolean
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** The first problem of a decoding failure, in terms a caller can act on. */
export const firstIssue = (error: Schema.SchemaError): FirstIssue => {
  const [issue] = formatIssues(error.issue).issues
  const message = issue?.message ?? "Invalid value"
  const path = (issue?.path ?? []).map((segment) =>
    String(typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment)
  )
  return { path, message, missing: message === "Missing key" }
}
