/** How the console shows times, numbers and values. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })

export const when = (iso: string | null): string => (iso === null ? "—" : dateTime.format(new Date(iso)))

// In a table's cell: no year, so a row stays one line.
const compactDateTime = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit"
})
export const shortWhen = (iso: string | null): string => (iso === null ? "—" : compactDateTime.format(new Date(iso)))

// 24-hour times: short enough for a tick every minute on a narrow chart.
const clockFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" })
const clockSecondsFormat = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23"
})
/** A time of day, for a chart's axis (`clock`) and its readings (`clockSeconds`). */
export const clock = (ms: number): string => clockFormat.format(new Date(ms))
export const clockSeconds = (ms: number): string => clockSecondsFormat.format(new Date(ms))

export const ago = (iso: string | null, now = Date.now()): string => {
  if (iso === null) return "never"
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000))
  if (seconds < 60) return `${seconds} s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`
  return `${Math.round(seconds / 86_400)} d ago`
}

/** How long until a time to come ("in 40 min"); "due" once it has passed. */
export const until = (iso: string, now = Date.now()): string => {
  const seconds = Math.round((Date.parse(iso) - now) / 1000)
  if (seconds <= 0) return "due"
  if (seconds < 60) return `in ${seconds} s`
  if (seconds < 3600) return `in ${Math.round(seconds / 60)} min`
  if (seconds < 86_400) return `in ${Math.round(seconds / 3600)} h`
  return `in ${Math.round(seconds / 86_400)} d`
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

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 })
/** A count of tokens or requests, with the locale's grouping ("12,345"). */
export const count = (n: number): string => integer.format(n)

/** A cost at `MODEL_PRICES`' prices (in their currency): "—" when a model in it has no price. */
export const cost = (value: number | null): string =>
  value === null ? "—" : value.toFixed(value !== 0 && Math.abs(value) < 1 ? 4 : 2)

/** A share as a percentage ("42 %"); "—" when there is nothing to take a share of. */
export const share = (part: number, whole: number): string =>
  whole <= 0 ? "—" : `${Math.round((part / whole) * 100)} %`
