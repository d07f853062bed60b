import { Context, Effect, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { GatewayApi } from "../app/Api.ts"
import { NAMESPACE_HEADER } from "../domain/Namespace.ts"

/** Where the gateway is and who calls it. */
export interface GatewayClientOptions {
  /** The gateway's root URL, e.g. `http://localhost:3100` (not `…/api`, not `…/v1`). */
  readonly url: string
  /** An admin key: `ADMIN_API_KEY`, or a `pmg_` key of scope admin. Omit it when the gateway has none. */
  readonly apiKey?: string | Redacted.Redacted<string> | undefined
  /** The namespace to act in (`X-Service-Namespace`); the env admin key without it acts across all. */
  readonly namespace?: string | undefined
}

/** The management API as typed functions, one per endpoint, grouped as in the API definition. */
export type GatewayApiClient = HttpApiClient.ForApi<typeof GatewayApi>

const withCaller =
  (options: GatewayClientOptions) =>
  (client: HttpClient.HttpClient): HttpClient.HttpClient =>
    client.pipe(
      HttpClient.mapRequest((request) => {
        const key = Redacted.isRedacted(options.apiKey) ? Redacted.value(options.apiKey) : options.apiKey
        const withKey = key === undefined || key === "" ? request : HttpClientRequest.bearerToken(request, key)
        return options.namespace === undefined
          ? withKey
          : HttpClientRequest.setHeader(withKey, NAMESPACE_HEADER, options.namespace)
      })
    )

/**
 * A typed client of the management API, built from the same `HttpApi` definition the server serves:
 * requests are encoded and answers decoded with the server's own schemas, and each endpoint's
 * declared errors (`NotFound`, `BadRequest`, …, each with `status` and the OpenAI-shaped `error`) are
 * typed failures.
 */
export class GatewayClient extends Context.Service<GatewayClient, GatewayApiClient>()(
  "profile-memory-gateway/GatewayClient"
) {
  /** The client, on the `HttpClient` in context. */
  static readonly make = (options: GatewayClientOptions) =>
    HttpApiClient.make(GatewayApi, { baseUrl: options.url, transformClient: withCaller(options) })

  /** The client, on the platform's `fetch`. */
  static readonly layer = (options: GatewayClientOptions): Layer.Layer<GatewayClient> =>
    Layer.effect(GatewayClient, GatewayClient.make(options)).pipe(Layer.provide(FetchHttpClient.layer))
}

/**
 * Each method's answer, decoded. (A method is generic in its response mode, and inference reads it at
 * its widest: the raw-response variants are left out, as the Promise client never asks for them.)
 */
type Promised<T> = {
  readonly [K in keyof T]: T[K] extends (...args: infer Args) => Effect.Effect<infer A, infer _E, never>
    ? (...args: Args) => Promise<Exclude<A, HttpClientResponse.HttpClientResponse | readonly [unknown, unknown]>>
    : Promised<T[K]>
}

/** The management API as Promise-returning functions: a failed call rejects with the typed error. */
export type GatewayPromiseClient = Promised<GatewayApiClient>

const promised = (node: object): object =>
  Object.fromEntries(
    Object.entries(node).map(([name, value]) => [
      name,
      typeof value === "function"
        ? (...args: ReadonlyArray<unknown>) => Effect.runPromise(value(...args))
        : promised(value as object)
    ])
  )

/**
 * For applications that do not use Effect: the same client with Promises
 * (`await client.profiles.get({ params: { id: "alice" } })`). Built once; each call runs on its own.
 */
export const createGatewayClient = async (options: GatewayClientOptions): Promise<GatewayPromiseClient> => {
  const client = await Effect.runPromise(GatewayClient.make(options).pipe(Effect.provide(FetchHttpClient.layer)))
  return promised(client) as GatewayPromiseClient
}
