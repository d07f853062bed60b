import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BudgetLimit, BudgetState } from "../budgets/Budget.ts"
import { IsoInstant } from "../domain/Memory.ts"
import { StorableString } from "../domain/storableText.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { BadRequest, Forbidden, NotFound } from "../http/OpenAiError.ts"
import { UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import { KeyUsage } from "../usage/UsageReport.ts"
import { ApiKey, ApiKeyScope } from "./ApiKey.ts"

export class KeyCreated extends Schema.Class<KeyCreated>("KeyCreated")(
  {
    ...ApiKey.fields,
    /** The secret: shown here only, never again. */
    key: Schema.String
  },
  { httpApiStatus: 201, description: "The key was created; `key` is its secret, shown only here" }
) {}

/** A key as listed: with its budget and what it spent this period. */
export const ListedKey = Schema.Struct({
  ...ApiKey.fields,
  budget: Schema.NullOr(BudgetState),
  usage: KeyUsage
})

/** A provider key goes in a header: a control character (CR, LF, NUL, …) would fail every request with it. */
const withoutControlCharacters = Schema.makeFilter((text: string) => !/\p{Cc}/u.test(text), {
  expected: "a provider key without control characters (CR, LF, NUL, …)"
})

/** How long a rotated key's old secret keeps working, unless told: an hour. */
export const DEFAULT_GRACE_SECONDS = 3600
const MAX_GRACE_SECONDS = 7 * 24 * 3600

/** `/api/keys`: keys held in the database, each for one namespace. */
export class KeysGroup extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.post("create", "/", {
      payload: Schema.Struct({
        namespace: Schema.optionalKey(Schema.String),
        scope: Schema.optionalKey(ApiKeyScope),
        label: Schema.optionalKey(StorableString.check(Schema.isMaxLength(200))),
        upstream: Schema.optionalKey(
          Schema.Struct({
            provider: UpstreamProvider,
            apiKey: Schema.String.check(Schema.isBetweenLength(1, 1000), withoutControlCharacters)
          }).annotate({
            description: "A provider key every request of this key goes with (stored encrypted; never shown again)"
          })
        ),
        rateLimitPerMinute: Schema.optionalKey(
          Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))).annotate({
            description: "Left out: the creating key's limit (none from the environment's admin key); `null`: none"
          })
        ),
        expiresAt: Schema.optionalKey(
          Schema.NullOr(IsoInstant).annotate({
            description: "Left out: the creating key's expiry (none from the environment's admin key); `null`: never"
          })
        ),
        budget: Schema.optionalKey(
          BudgetLimit.annotate({
            description: "Tokens (or cost) the key may spend per UTC `day` or `month`; past it, its requests answer 429"
          })
        )
      }),
      success: KeyCreated,
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Create a key",
        description:
          "A key for one namespace (default: the caller's): `app` admits `/v1` and `/mcp`, `admin` the management " +
          "API, both in that namespace only. The secret is in this answer only; only its SHA-256 is stored. A " +
          "namespace's admin key creates keys for its own namespace only, and none that outgrows it: expiry no " +
          "later, limit no higher (what is left out is inherited from it), else 403 `exceeds_creator_key`. " +
          "`createdBy` names it."
      })
    ),
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({ keys: Schema.Array(ListedKey) })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List keys",
        description:
          "The caller's namespace's keys (the global admin: every namespace's), revoked ones included, newest first; " +
          "never their secrets. Each with its budget (spent and left this period) and its usage this period (the " +
          "budget's, else the month) and last use."
      })
    ),
    HttpApiEndpoint.put("setBudget", "/:id/budget", {
      params: { id: Schema.String },
      payload: BudgetLimit,
      success: Schema.Struct({ budget: BudgetState }),
      error: [NotFound, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a key's budget",
        description:
          "Tokens (input and output, the memory work done with the key's provider key included) or cost (at " +
          "`MODEL_PRICES`) the key may spend per UTC `day` or `month`. Once spent, its requests answer 429 " +
          "`budget_exceeded` until the next period. A key held in the database sets budgets only on itself and " +
          "the keys it created."
      })
    ),
    HttpApiEndpoint.delete("removeBudget", "/:id/budget", {
      params: { id: Schema.String },
      success: Schema.Struct({ removed: Schema.Boolean }),
      error: [NotFound, Forbidden]
    }).annotateMerge(OpenApi.annotations({ summary: "Remove a key's budget" })),
    HttpApiEndpoint.post("rotate", "/:id/rotate", {
      params: { id: Schema.String },
      payload: Schema.Struct({
        graceSeconds: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MAX_GRACE_SECONDS })))
      }),
      success: KeyCreated,
      error: [NotFound, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Rotate a key",
        description:
          "A new secret with the key's settings and creator; the old secret keeps working for `graceSeconds` " +
          `(default ${DEFAULT_GRACE_SECONDS}, at most ${MAX_GRACE_SECONDS}), so clients move over without downtime. ` +
          "The keys the old one created move to the new one. A key held in the database rotates only itself " +
          "and the keys it created (else 403 `not_created_by_this_key`)."
      })
    ),
    HttpApiEndpoint.delete("revoke", "/:id", {
      params: { id: Schema.String },
      success: Schema.Struct({ key: ApiKey }),
      error: [NotFound, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Revoke a key",
        description:
          "Refused from then on, with every key it created (transitively): at once by this replica, within a " +
          "second by every other. A key held in the database revokes only itself and the keys it created " +
          "(else 403 `not_created_by_this_key`)."
      })
    )
  )
  .prefix("/api/keys")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "Keys held in the database, each for one namespace" })) {}
