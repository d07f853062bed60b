import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Effect, Option, Redacted } from "effect"

/**
 * Provider keys bound to the gateway's keys are stored encrypted with AES-256-GCM under
 * `KEY_ENCRYPTION_KEY` (32 bytes, base64 or hex): the database alone does not give them away.
 * Sealed: base64 of the 12-byte nonce, the 16-byte tag and the ciphertext.
 */
export interface SecretBox {
  readonly seal: (plain: string) => string
  /** `undefined` when the sealed text was not made with this key (or was altered). */
  readonly open: (sealed: string) => Redacted.Redacted<string> | undefined
}

/** The box of a 32-byte key given as base64 or hex; `undefined` for anything else. */
export const secretBoxOf = (encoded: string): SecretBox | undefined => {
  const trimmed = encoded.trim()
  const key = /^[0-9a-f]{64}$/i.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : /^[A-Za-z0-9+/]{43}=$/.test(trimmed)
      ? Buffer.from(trimmed, "base64")
      : undefined
  if (key?.length !== 32) return undefined
  return {
    seal: (plain) => {
      const nonce = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, nonce)
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()])
      return Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64")
    },
    open: (sealed) => {
      try {
        const bytes = Buffer.from(sealed, "base64")
        if (bytes.length < 28) return undefined
        const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, 12), { authTagLength: 16 })
        decipher.setAuthTag(bytes.subarray(12, 28))
        return Redacted.make(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString("utf8"))
      } catch {
        return undefined
      }
    }
  }
}

/** The box of `KEY_ENCRYPTION_KEY`, when the gateway has one; a key it cannot use stops the start. */
export const configuredSecretBox = (
  keyEncryptionKey: Option.Option<Redacted.Redacted<string>>
): Effect.Effect<SecretBox | undefined> => {
  if (Option.isNone(keyEncryptionKey)) return Effect.succeed(undefined)
  const box = secretBoxOf(Redacted.value(keyEncryptionKey.value))
  return box === undefined
    ? Effect.die(new Error("KEY_ENCRYPTION_KEY must be 32 bytes, written in base64 or hex"))
    : Effect.succeed(box)
}
