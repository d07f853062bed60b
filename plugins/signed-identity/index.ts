import { createHmac, timingSafeEqual } from "node:crypto"
import { Config, Context, Effect, Layer, Predicate, Redacted } from "effect"
import { definePlugin, PluginRejection } from "../../src/plugins/Plugin.ts"

class IdentitySecret extends Context.Service<IdentitySecret, { readonly key: Buffer }>()(
  "plugins/signed-identity/IdentitySecret"
) {}

const TOKEN_HEADER = "x-service-identity"
const SIGNATURE_HEADER = "x-service-id-signature"

const hmac = (key: Buffer, data: string) => createHmac("sha256", key).update(data, "utf8").digest()

const sameBytes = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b)

const reject = (message: string) =>
  Effect.fail(new PluginRejection({ status: 401, code: "invalid_user_signature", message }))

/** The `sub` of an HS256 JWT signed with the key, if the token is valid and not expired. */
export const verifyToken = (token: string, key: Buffer, nowSeconds: number): string | undefined => {
  const parts = token.split(".")
  if (parts.length !== 3) return undefined
  const [header, payload, signature] = parts as [string, string, string]
  try {
    const head: unknown = JSON.parse(Buffer.from(header, "base64url").toString("utf8"))
    if (!Predicate.isObject(head) || head["alg"] !== "HS256") return undefined
    if (!sameBytes(Buffer.from(signature, "base64url"), hmac(key, `${header}.${payload}`))) return undefined
    const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
    if (!Predicate.isObject(claims) || !Predicate.isString(claims["sub"])) return undefined
    if (Predicate.isNumber(claims["exp"]) && claims["exp"] <= nowSeconds) return undefined
    return claims["sub"]
  } catch {
    return undefined
  }
}

/** The hex HMAC-SHA256 of a user id: what a trusted backend sends in `X-Service-Id-Signature`. */
export const signUserId = (userId: string, secret: string) => hmac(Buffer.from(secret, "utf8"), userId).toString("hex")

/**
 * Accepts a user id only when it is signed with `SIGNED_IDENTITY_SECRET`, so a client cannot read
 * another user's memory by changing a header. Either an HS256 JWT in `X-Service-Identity` (its
 * `sub` is the user id) or the user id (from `X-Service-Id`, `user` or `metadata.profile_id`) with
 * its hex HMAC-SHA256 in `X-Service-Id-Signature`. Anything else: 401 `invalid_user_signature`.
 * Required: if the plugin itself fails, the request fails rather than going through unchecked.
 */
export default definePlugin({
  name: "signed-identity",
  required: true,
  layer: Layer.effect(
    IdentitySecret,
    Effect.map(Config.Redacted("SIGNED_IDENTITY_SECRET"), (secret) =>
      IdentitySecret.of({ key: Buffer.from(Redacted.value(secret), "utf8") })
    )
  ),
  hooks: {
    resolveUser: (context) =>
      Effect.gen(function* () {
        const { key } = yield* IdentitySecret
        const token = context.headers[TOKEN_HEADER]
        if (token !== undefined) {
          const subject = verifyToken(token.trim(), key, Math.floor(Date.now() / 1000))
          return subject ?? (yield* reject("The identity token is invalid or expired"))
        }
        const signature = context.headers[SIGNATURE_HEADER]
        if (context.userId === undefined || signature === undefined) {
          return yield* reject(
            `Send the user id with its signature in ${SIGNATURE_HEADER}, or a token in ${TOKEN_HEADER}`
          )
        }
        const given = Buffer.from(signature.trim(), "hex")
        if (!sameBytes(given, hmac(key, context.userId))) return yield* reject("The user id signature does not match")
        return undefined
      })
  }
})
