import { createHmac, timingSafeEqual } from "node:crypto"

/**
 * The signature every webhook delivery carries, in the scheme of Stripe and Svix:
 * `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>`.
 * The timestamp is signed too, so a captured delivery cannot be replayed later than the tolerance.
 * This file needs nothing but Node: receivers import `verifyWebhookSignature` from the package.
 */
export const SIGNATURE_HEADER = "x-service-signature"

/** How old a signed timestamp `verifyWebhookSignature` accepts unless told: five minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300

const digest = (secret: string, timestamp: number, body: string | Uint8Array) =>
  createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest()

/** The header's value for this body, signed at `timestamp` (unix seconds). */
export const signatureHeader = (secret: string, body: string | Uint8Array, timestamp: number) =>
  `t=${timestamp},v1=${digest(secret, timestamp, body).toString("hex")}`

export interface VerifyOptions {
  /** The webhook's secret (`whsec_…`, shown when the webhook was created). */
  readonly secret: string
  /** The `X-Service-Signature` header as received. */
  readonly header: string | null | undefined
  /** The request body exactly as received (not parsed and re-serialised). */
  readonly body: string | Uint8Array
  /** How far the signed time may be from now, either way (default 300 s). */
  readonly toleranceSeconds?: number
  /** Now, in epoch milliseconds (default: the clock). */
  readonly now?: number
}

/**
 * Whether a delivery is genuine: signed with this secret over this exact body, at a time within the
 * tolerance. Several `v1=` entries may be present; one matching is enough.
 */
export const verifyWebhookSignature = (options: VerifyOptions): boolean => {
  if (typeof options.header !== "string") return false
  let timestamp: number | undefined
  const signatures: Array<Buffer> = []
  for (const part of options.header.split(",")) {
    const [name, value] = part.trim().split("=", 2)
    if (name === "t" && value !== undefined && /^\d{1,12}$/.test(value)) timestamp = Number(value)
    else if (name === "v1" && value !== undefined && /^[0-9a-f]{64}$/i.test(value))
      signatures.push(Buffer.from(value, "hex"))
  }
  if (timestamp === undefined || signatures.length === 0) return false
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (Math.abs((options.now ?? Date.now()) / 1000 - timestamp) > tolerance) return false
  const expected = digest(options.secret, timestamp, options.body)
  return signatures.some((signature) => timingSafeEqual(signature, expected))
}
