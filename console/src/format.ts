/** How the console shows times, numbers and values. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })

export const when = (iso: string | null): string => (iso === null ? "—" : dateTime.format(new Date(iso)))

export const ago = (iso: string | null, now = Date.now()): string => {
  if (iso === null) return "never"
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000))
  if (seconds < 60) return `${seconds} s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} d ago`
}

export const fixed = (n: number, digits = 2) => n.toFixed(digits)

/** A trait value as it is edited: text for strings and enums, JSON for the rest. */
export const valueText = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value))

/** What the field's text means for a trait of this type (text stays text for strings and enums). */
export const parseValue = (
  text: string,
  valueType: string
): { readonly value: unknown } | { readonly error: string } => {
  if (valueType === "string" || valueType === "enum") return { value: text }
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return { error: valueType === "number" ? "Enter a number" : `Enter JSON (a ${valueType})` }
  }
}
