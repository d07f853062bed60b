import { createHash, timingSafeEqual } from "node:crypto"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.ts"

export class AuthFailure extends Schema.TaggedError<AuthFailure>()("AuthFailure", {
  code: Schema.Literals(["missing_api_key", "invalid_api_key"]),
  message: Schema.String
}) {}

// Comparing digests keeps the comparison constant-time and independent of the key's length.
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * The optional shared key (`SERVICE_API_KEY`) that guards `/api` and `/v1`. Callers send
 * `Authorization: Bearer <key>`; the scheme is case-insensitive.
 */
export class ServiceAuth extends Context.Service<ServiceAuth, {
  readonly enabled: boolean
  readonly check: (authorization: string | undefined) => Effect.Effect<void, AuthFailure>
}>()("gateway/auth/ServiceAuth") {
  static readonly make = (key: Option.Option<Redacted.Redacted<string>>): ServiceAuth["Service"] => {
    if (Option.isNone(key)) return ServiceAuth.of({ enabled: false, check: () => Effect.void })
    const expected = digest(Redacted.value(key.value))
    return ServiceAuth.of({
      enabled: true,
      check: (authorization) => {
        if (authorization === undefined || authorization.trim() === "") {
          return Effect.fail(new AuthFailure({
            code: "missing_api_key",
            message: "Missing API key: send 'Authorization: Bearer <SERVICE_API_KEY>'"
          }))
        }
        const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization)
        if (match === null || !timingSafeEqual(digest(match[1]!), expected)) {
          return Effect.fail(new AuthFailure({ code: "invalid_api_key", message: "Invalid API key" }))
        }
        return Effect.void
      }
    })
  }

  static readonly layer = Layer.effect(ServiceAuth, Effect.map(AppConfig, (config) => ServiceAuth.make(config.serviceApiKey)))
}
