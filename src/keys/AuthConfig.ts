import { type Config, Context } from "effect"
import { optionalSecret, secretList, section } from "../config/values.ts"

/** The keys the gateway accepts, comma-separated so a new key can be rolled out before the old one is removed. */
export const authFromEnv = section({
  /** App keys (`SERVICE_API_KEY`): they admit `/v1`, and everything else too while no admin key is set. None: `/v1` is open. */
  serviceApiKeys: secretList("SERVICE_API_KEY"),
  /** Admin keys (`ADMIN_API_KEY`): once set, the only keys `/api` and `/metrics` accept. */
  adminApiKeys: secretList("ADMIN_API_KEY"),
  /** Encrypts the provider keys bound to keys held in the database (32 bytes, base64 or hex). None: no binding. */
  keyEncryptionKey: optionalSecret("KEY_ENCRYPTION_KEY")
})

export type AuthSettings = Config.Success<typeof authFromEnv>

export class AuthConfig extends Context.Service<AuthConfig, AuthSettings>()("gateway/auth/AuthConfig") {}
