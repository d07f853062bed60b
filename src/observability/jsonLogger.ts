import { Cause, Context, Formatter, Logger, Predicate, References, Tracer } from "effect"

/** A log call's part that is a record of fields (`{ status, ms }`), not text or an error. */
const isFields = (part: unknown): part is Record<string, unknown> => {
  if (!Predicate.isObject(part) || Array.isArray(part)) return false
  const prototype = Object.getPrototypeOf(part)
  return prototype === Object.prototype || prototype === null
}

/** An error's text (`Name: message`), or the value formatted. */
const describe = (value: unknown): string => {
  if (typeof value === "string") return value
  if (Predicate.hasProperty(value, "message") && typeof value.message === "string") {
    const name = Predicate.hasProperty(value, "name") && typeof value.name === "string" ? value.name : ""
    return name === "" || name === "Error" ? value.message : `${name}: ${value.message}`
  }
  return Formatter.format(value)
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim()

/**
 * Logs as one JSON object per line whose `message` is always a string. Effect's `consoleJson`
 * writes an array when a call has several parts and an empty one for a cause logged alone
 * (as a failed start is); here text parts are joined, the fields of record parts join the
 * annotations, and a lone cause's error becomes the message. `cause` keeps the full rendering.
 * With `traceIds`, a line written inside a span names it (`traceId`, `spanId`), to find its trace.
 */
export const jsonLogger = (options: { readonly traceIds: boolean }): Logger.Logger<unknown, void> =>
  Logger.withConsoleLog(
    Logger.make(({ cause, date, fiber, logLevel, message }) => {
      const annotations: Record<string, unknown> = { ...fiber.getRef(References.CurrentLogAnnotations) }
      const text: Array<string> = []
      for (const part of Array.isArray(message) ? message : [message]) {
        if (isFields(part)) Object.assign(annotations, part)
        else text.push(describe(part))
      }
      const failed = cause.reasons.length > 0
      if (text.length === 0 && failed) text.push(describe(Cause.squash(cause)))
      const spans: Record<string, number> = {}
      for (const [label, startedAt] of fiber.getRef(References.CurrentLogSpans))
        spans[label] = date.getTime() - startedAt
      const span = options.traceIds ? Context.getOrUndefined(fiber.context, Tracer.ParentSpan) : undefined
      return Formatter.formatJson({
        message: oneLine(text.join(" ")),
        level: logLevel.toUpperCase(),
        timestamp: date.toISOString(),
        cause: failed ? Cause.pretty(cause) : undefined,
        annotations,
        spans,
        fiberId: `#${fiber.id}`,
        traceId: span?.traceId,
        spanId: span?.spanId
      })
    })
  )
