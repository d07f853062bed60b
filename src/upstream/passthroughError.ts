import { brotliDecompressSync, constants, gunzipSync, inflateRawSync, inflateSync } from "node:zlib"
import { redactSecrets } from "../providers/errors.ts"
import type { Provider } from "../providers/Provider.ts"
import { MAX_ERROR_BODY_BYTES } from "./errorBody.ts"

/** A provider's error answer to a passed-through call, its body read up to `MAX_ERROR_BODY_BYTES`. */
export interface ReadErrorAnswer {
  readonly status: number
  /** As relayed (hop headers already dropped). */
  readonly headers: Readonly<Record<string, string>>
  readonly bytes: Uint8Array
  /** The body went on past what was read. */
  readonly truncated: boolean
}

/** Most a compressed error body may inflate to; past that it is not relayed. */
const MAX_INFLATED_BYTES = 4 * MAX_ERROR_BODY_BYTES

/** A cut secret's shortest tail worth hiding: fewer characters say nothing of the key. */
const MIN_PARTIAL_SECRET = 4

const encoder = new TextEncoder()

/**
 * The body's text whatever its `content-encoding`: a client that accepts gzip gets its errors
 * gzipped, and a key inside would pass unseen. `undefined` when it cannot be read (an encoding not
 * known here, corrupt data, a bomb).
 */
const decodedText = (bytes: Uint8Array, encoding: string | undefined, truncated: boolean): string | undefined => {
  const name = encoding?.trim().toLowerCase() ?? ""
  try {
    // A body cut short inflates as far as it goes.
    const zlibOptions = { maxOutputLength: MAX_INFLATED_BYTES, finishFlush: constants.Z_SYNC_FLUSH }
    const plain =
      name === "" || name === "identity"
        ? bytes
        : name === "gzip" || name === "x-gzip"
          ? gunzipSync(bytes, zlibOptions)
          : name === "deflate"
            ? inflateOrRaw(bytes, zlibOptions)
            : name === "br"
              ? brotliDecompressSync(bytes, {
                  maxOutputLength: MAX_INFLATED_BYTES,
                  finishFlush: truncated ? constants.BROTLI_OPERATION_FLUSH : constants.BROTLI_OPERATION_FINISH
                })
              : undefined
    return plain === undefined ? undefined : new TextDecoder().decode(plain)
  } catch {
    return undefined
  }
}

// `deflate` is zlib-wrapped by the standard, raw by some servers.
const inflateOrRaw = (bytes: Uint8Array, options: Parameters<typeof inflateSync>[1]) => {
  try {
    return inflateSync(bytes, options)
  } catch {
    return inflateRawSync(bytes, options)
  }
}

/** A secret as it may appear in JSON text: as is, escaped, with `/` escaped too. */
const writtenForms = (secret: string): ReadonlyArray<string> => {
  const escaped = JSON.stringify(secret).slice(1, -1)
  return [...new Set([secret, escaped, escaped.replaceAll("/", "\\/")])]
}

/** The text with a secret cut by the end of what was read hidden too (its first characters). */
const withoutCutSecret = (text: string, secrets: ReadonlyArray<string>): string => {
  for (const secret of secrets) {
    for (let length = Math.min(secret.length - 1, text.length); length >= MIN_PARTIAL_SECRET; length--) {
      if (text.endsWith(secret.slice(0, length))) return `${text.slice(0, text.length - length)}[redacted]`
    }
  }
  return text
}

/** Every key the gateway sent or holds, and anything key-like, out of `text`. */
export const redactText = (text: string, secrets: ReadonlyArray<string>, truncated = false): string => {
  const forms = secrets.filter((secret) => secret !== "").flatMap(writtenForms)
  const redacted = redactSecrets(text, forms)
  return truncated ? withoutCutSecret(redacted, forms) : redacted
}

/** What the client gets in place of an error body the gateway could not read: its own, in the provider's shape. */
const unreadableBody = (status: number, provider: Provider) =>
  JSON.stringify(provider.unreadableError(`The upstream provider answered ${status}; its error body could not be read`))

/**
 * A provider's error answer to a passed-through call, as the client may see it: the same status and
 * headers, the body (at most the part read) with every key the gateway sent or holds, and anything
 * key-like, redacted, its length fixed. Providers echo the key in a 401 ("Incorrect API key provided:
 * sk-…"), and here the key is the operator's or a tenant's bound one, never the client's. A body that
 * cannot be read (an unknown `content-encoding`) is replaced by the gateway's own error. Bytes with
 * nothing to redact go as they came.
 */
export const redactedErrorAnswer = (
  answer: ReadErrorAnswer,
  secrets: ReadonlyArray<string>,
  provider: Provider
): { readonly headers: Record<string, string>; readonly body: Uint8Array } => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(answer.headers)) headers[name] = redactText(value, secrets)
  const encoding = answer.headers["content-encoding"]
  const text = decodedText(answer.bytes, encoding, answer.truncated)
  let body: Uint8Array
  if (text === undefined) {
    body = encoder.encode(unreadableBody(answer.status, provider))
    headers["content-type"] = "application/json"
  } else {
    const redacted = redactText(text, secrets, answer.truncated)
    const plain = encoding === undefined || ["", "identity"].includes(encoding.trim().toLowerCase())
    body = plain && redacted === text ? answer.bytes : encoder.encode(redacted)
  }
  // The body goes as plain bytes of this length, whatever the provider's said.
  delete headers["content-encoding"]
  delete headers["transfer-encoding"]
  headers["content-length"] = String(body.byteLength)
  return { headers, body }
}
