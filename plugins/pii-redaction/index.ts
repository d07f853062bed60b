import { Config, Context, Effect, Layer, Predicate } from "effect"
import { definePlugin, type RecordedMessage } from "../../src/plugins/Plugin.ts"

class RedactionSettings extends Context.Service<
  RedactionSettings,
  {
    /** Also redact the request sent to the provider (`PII_REDACT_UPSTREAM=true`). */
    readonly upstream: boolean
  }
>()("plugins/pii-redaction/RedactionSettings") {}

/** Key-shaped strings: provider keys, cloud and chat tokens, long mixed tokens. */
const SECRET = new RegExp(
  [
    "\\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}",
    "\\bAKIA[0-9A-Z]{16}\\b",
    "\\bgh[pousr]_[A-Za-z0-9]{20,}\\b",
    "\\bxox[abprs]-[A-Za-z0-9-]{10,}",
    "\\bAIza[0-9A-Za-z_-]{35}",
    "\\beyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}",
    "\\b(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}\\b"
  ].join("|"),
  "g"
)
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g
const CARD = /\b\d(?:[ -]?\d){12,18}\b/g
/** International (+…), bracketed area code, or 3-3-4 numbers; dates and order numbers do not match. */
const PHONE =
  /\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]?\d{2,4}){1,4}\b|\(\d{2,4}\)[\s.-]?\d{3,4}[\s.-]?\d{3,4}\b|\b\d{3}[\s.-]\d{3}[\s.-]\d{4}\b/g

/** Card numbers pass the Luhn check; other long digit runs (order numbers…) are left alone. */
const passesLuhn = (digits: string) => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return sum % 10 === 0
}

/** Replaces secrets, e-mail addresses, card numbers and phone numbers with placeholders. */
export const redact = (text: string): string =>
  text
    .replace(SECRET, "[secret]")
    .replace(EMAIL, "[email]")
    .replace(CARD, (match) => (passesLuhn(match.replace(/\D/g, "")) ? "[card]" : match))
    .replace(PHONE, (match) => (match.replace(/\D/g, "").length >= 8 ? "[phone]" : match))

const redactContent = (content: unknown): unknown => {
  if (Predicate.isString(content)) return redact(content)
  if (!Array.isArray(content)) return content
  return content.map((part) =>
    Predicate.isObject(part) && part["type"] === "text" && Predicate.isString(part["text"])
      ? { ...part, text: redact(part["text"]) }
      : part
  )
}

const redactMessage = (message: RecordedMessage): RecordedMessage => ({
  ...message,
  content: redact(message.content),
  toolCalls: message.toolCalls === null ? null : JSON.parse(redact(JSON.stringify(message.toolCalls)))
})

/**
 * Keeps personal data out of what the gateway stores and sends to extraction: e-mail addresses,
 * phone numbers, card numbers and key-like strings become `[email]`, `[phone]`, `[card]`,
 * `[secret]`. With `PII_REDACT_UPSTREAM=true` the request to the provider is redacted too.
 */
export default definePlugin({
  name: "pii-redaction",
  layer: Layer.effect(
    RedactionSettings,
    Effect.map(Config.Boolean("PII_REDACT_UPSTREAM").pipe(Config.withDefault(false)), (upstream) =>
      RedactionSettings.of({ upstream })
    )
  ),
  hooks: {
    beforeRecord: (messages) => Effect.sync(() => messages.map(redactMessage)),
    beforeForward: (context) =>
      Effect.gen(function* () {
        const settings = yield* RedactionSettings
        const messages = context.body["messages"]
        if (!settings.upstream || !Array.isArray(messages)) return context.body
        return {
          ...context.body,
          messages: messages.map((message) =>
            Predicate.isObject(message) ? { ...message, content: redactContent(message["content"]) } : message
          )
        }
      })
  }
})
