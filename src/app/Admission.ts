import { Effect, Metric, Option, Schema } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorFormatOf } from "../apis/errorFormat.ts"
import { type AdmittedKey, AuthFailure, type ServiceAuth } from "../auth/ServiceAuth.ts"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import {
  allNamespaces,
  DEFAULT_NAMESPACE,
  isNamespaceName,
  NAMESPACE_HEADER,
  type NamespaceScope,
  oneNamespace
} from "../domain/Namespace.ts"
import { errorResponse } from "../http/OpenAiError.ts"
import type { VirtualKeyGrant } from "../keys/VirtualKeys.ts"
import { authRejections, labelled } from "../observability/metrics.ts"
import { clientKey } from "../ratelimit/clientKey.ts"
import type { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { type PathClass, scopeOf } from "./pathKind.ts"

export interface AdmissionServices {
  readonly auth: ServiceAuth["Service"]
  readonly limiter: RateLimiter["Service"]
}

const rejectionsOf = labelled(authRejections)

const refused = (
  error: Parameters<typeof errorResponse>[0],
  request: HttpServerRequest.HttpServerRequest
): Admitted => ({ _tag: "Refused", response: errorResponse(error, errorFormatOf(request)) })

/**
 * The key a request presents: `Authorization: Bearer <key>`, or, from a client that sends none
 * (Anthropic's SDKs), `x-api-key: <key>`.
 */
const presentedKey = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  const authorization = headers["authorization"]
  if (authorization !== undefined && authorization.trim() !== "") return authorization
  const apiKey = headers["x-api-key"]?.trim()
  return apiKey === undefined || apiKey === "" ? authorization : `Bearer ${apiKey}`
}

/** A namespace header that names no namespace, or one the key does not belong to. */
export class NamespaceRefused
  extends Schema.TaggedError<NamespaceRefused>()("NamespaceRefused", {
    code: Schema.Literals(["invalid_namespace", "namespace_not_allowed"]),
    message: Schema.String
  })
  implements ClientFacing<400 | 403>
{
  get clientError() {
    return clientError(this.code === "invalid_namespace" ? 400 : 403, this.code, this.message)
  }
}

/**
 * The namespaces the request acts in. A key held in the database acts in its namespace; the
 * environment's app keys (and open `/v1`) in `default`; the environment's admin key (or anyone, while
 * the admin paths are open) in the namespace its `X-Service-Namespace` header names, or across all
 * of them without one. A header naming another namespace than the key's is refused.
 */
const namespaceOf = (
  scope: "app" | "admin",
  header: string | undefined,
  key: AdmittedKey | undefined
): Effect.Effect<NamespaceScope, NamespaceRefused> => {
  const named = header?.trim()
  // A key held in the database acts in its own namespace, whatever its kind.
  const bound = key?.namespace ?? (scope === "app" ? DEFAULT_NAMESPACE : undefined)
  if (named === undefined || named === "")
    return Effect.succeed(bound === undefined ? allNamespaces : oneNamespace(bound))
  if (!isNamespaceName(named)) {
    return Effect.fail(
      new NamespaceRefused({
        code: "invalid_namespace",
        message: `${NAMESPACE_HEADER} must be 1–63 lowercase letters, digits, '-' or '_'`
      })
    )
  }
  if (bound !== undefined && named !== bound) {
    return Effect.fail(
      new NamespaceRefused({
        code: "namespace_not_allowed",
        message: `This key acts in namespace '${bound}'; a namespace comes from the key, not the request`
      })
    )
  }
  return Effect.succeed(oneNamespace(named))
}

/** A request let through, in its namespaces; or the answer that refuses it. */
export type Admitted =
  | {
      readonly _tag: "Admitted"
      readonly namespace: NamespaceScope | undefined
      /** The key held in the database that admitted the request, if one did (`CurrentKey`). */
      readonly key?: VirtualKeyGrant | undefined
    }
  | { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse }

/**
 * Whether a request may go on, decided before routing (unknown paths are guarded like known
 * ones) on the path as the router reads it (`pathKind.ts`): a client past its wrong keys gets 429 without a key check; then the key must fit the
 * path's scope; then the app key's bucket (`/v1`) or the client's (`/api`) must hold a token.
 * Only a wrong key counts against the client: a missing key or one of the other kind guesses nothing.
 * Public paths touch no profile data and get no namespace.
 */
export const admission = (
  services: AdmissionServices,
  request: HttpServerRequest.HttpServerRequest,
  path: PathClass
): Effect.Effect<Admitted> => {
  const scope = scopeOf(path)
  if (scope === "public") return Effect.succeed({ _tag: "Admitted", namespace: undefined })
  const { auth, limiter } = services
  const keyed = auth.requiresKey(scope)
  const management = path.kind === "management"
  const client = clientKey(request.remoteAddress)
  const presented = presentedKey(request.headers)
  return Effect.gen(function* () {
    let key: AdmittedKey | undefined
    // On an open path a key is still read: one held in the database names its namespace.
    if (keyed || presented !== undefined) {
      if (keyed) yield* limiter.checkAuthFailures(client)
      const admitted = yield* auth
        .authorize(scope, presented)
        .pipe(
          Effect.tapError((failure) =>
            failure.code === "invalid_api_key" ? limiter.recordAuthFailure(client) : Effect.void
          )
        )
      key = Option.getOrUndefined(admitted)
      // The metrics count every namespace's traffic: a namespace's own admin key does not see them.
      if (key?.namespace !== undefined && path.kind === "metrics") {
        return yield* new AuthFailure({
          code: "insufficient_scope",
          message: "/metrics covers every namespace: it takes the environment's admin key (ADMIN_API_KEY)"
        })
      }
      if (scope === "app" && key !== undefined) yield* limiter.takeKey(key.id)
      if (key?.rateLimitPerMinute !== undefined) yield* limiter.takeOwnKeyLimit(key.id, key.rateLimitPerMinute)
    }
    if (management) yield* limiter.takeClient(client)
    const namespace = yield* namespaceOf(scope, request.headers[NAMESPACE_HEADER], key)
    return { _tag: "Admitted", namespace, key: key?.databaseKey } as const
  }).pipe(
    Effect.catchTags({
      AuthFailure: (failure) =>
        Metric.update(rejectionsOf({ code: failure.code }), 1).pipe(Effect.as(refused(failure, request))),
      RateLimitExceeded: (error) => Effect.succeed(refused(error, request)),
      NamespaceRefused: (error) => Effect.succeed(refused(error, request))
    })
  )
}
