import { Result, Schema, SchemaGetter } from "effect"

/**
 * The one rule for user identifiers (a profile's external id), wherever they come from: the
 * `X-Service-Id` header, the body's `user` or `metadata.profile_id`, a `resolveUser` plugin,
 * `POST /api/profiles` and `{id}` in `/api` paths. The proxy parses with `parseUserId`; the
 * management API decodes with `UserId` (as `ExternalId`) and `ProfileRefParam`, built here.
 *
 * The database keeps its own CHECK on `external_id` (1 to 256 characters, migration 0001) as a
 * backstop for rows written around the gateway. It cannot be derived from `MAX_USER_ID_LENGTH`: an
 * applied migration never runs again, so a constant read by it would change fresh databases only.
 * test/identity.test.ts holds the two to the same bounds.
 */

export const MAX_USER_ID_LENGTH = 256

/** What a valid id is, for schema messages (after "an id" or "an external id"). */
export const USER_ID_EXPECTATION = `of 1 to ${MAX_USER_ID_LENGTH} characters without control, format or separator characters`

/**
 * Characters an id may not contain: controls (Cc), format characters (Cf: zero-width spaces, soft
 * hyphens, byte order marks, every bidi control such as U+202E and U+2066), line and paragraph
 * separators, and unpaired surrogates. They are invisible or reorder text, so two ids that look
 * the same could name different users.
 */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u

/** Trimmed and in Unicode NFC, so "José" typed, pasted or decomposed is one user. */
export const normalizeUserId = (raw: string): string => raw.trim().normalize("NFC")

/** Why a normalised id is refused, or `undefined` when it is a valid id. */
export const userIdProblem = (id: string): string | undefined => {
  if (id === "") return "must not be blank"
  // Characters (code points), as the database counts them.
  let length = 0
  for (const _ of id) length++
  if (length > MAX_USER_ID_LENGTH) return `must be at most ${MAX_USER_ID_LENGTH} characters`
  if (FORBIDDEN.test(id)) return "must not contain control, format (zero-width, bidi) or separator characters"
  return undefined
}

/** A raw id, normalised and checked: the id, or the reason it is refused. */
export const parseUserId = (raw: string): Result.Result<string, string> => {
  const id = normalizeUserId(raw)
  const problem = userIdProblem(id)
  return problem === undefined ? Result.succeed(id) : Result.fail(problem)
}

// `ignoreBOM`: a text that starts with U+FEFF keeps it (the default decoder would drop it as a byte order mark).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Node reads header bytes as Latin-1, one character per byte, so a UTF-8 "José" arrives as
 * "JosÃ©". Bytes that form valid UTF-8 are read again as UTF-8; anything else (a Latin-1 "José",
 * plain ASCII) stays as it came.
 */
export const decodeHeaderText = (value: string): string => {
  if (!/[\u0080-\u00ff]/.test(value) || /[^\u0000-\u00ff]/.test(value)) return value
  try {
    return utf8.decode(Buffer.from(value, "latin1"))
  } catch {
    return value
  }
}

/**
 * Text read as the rule reads ids: trimmed and in NFC, then refused with the reason `problemOf`
 * gives (undefined: accepted). `expected` describes what is accepted.
 */
export const normalizedIdText = (problemOf: (id: string) => string | undefined, expected: string) =>
  Schema.String.pipe(
    Schema.decodeTo(Schema.String.check(Schema.makeFilter((id: string) => problemOf(id) ?? true, { expected })), {
      decode: SchemaGetter.transform(normalizeUserId),
      encode: SchemaGetter.passthrough()
    })
  )

/** A user id in a request: decoded as trimmed NFC text, refused (with the reason) when it breaks the rule. */
export const UserId = normalizedIdText(userIdProblem, `an id ${USER_ID_EXPECTATION}`)
