import type { TraitDefinition } from "../../api.ts"

/**
 * A trait's value as it is typed: a select of the allowed values for an enum trait (and of true and
 * false for a boolean one), text for the rest (JSON for numbers, arrays and objects). `text` is the
 * value as `valueText` writes it.
 */
export const TraitValueField = (props: {
  readonly id: string
  readonly valueType: string
  readonly definition: TraitDefinition | undefined
  readonly text: string
  readonly onText: (text: string) => void
  readonly invalid: boolean
  readonly describedBy?: string
}) => {
  const { id, valueType, definition, text, onText, invalid, describedBy } = props
  const choices =
    valueType === "enum" && definition !== undefined && definition.enumValues.length > 0
      ? definition.enumValues
      : valueType === "boolean"
        ? ["true", "false"]
        : null
  const common = {
    id,
    "aria-invalid": invalid,
    ...(describedBy === undefined ? {} : { "aria-describedby": describedBy })
  }
  if (choices === null)
    return <input {...common} required value={text} onInput={(e) => onText(e.currentTarget.value)} />
  // A value the schema no longer allows (set before it changed) stays shown, rather than silently replaced.
  const options = text === "" || choices.includes(text) ? choices : [text, ...choices]
  return (
    <select {...common} required value={text} onChange={(e) => onText(e.currentTarget.value)}>
      {text === "" && <option value="">Choose…</option>}
      {options.map((choice) => (
        <option value={choice}>{choice}</option>
      ))}
    </select>
  )
}
