import { describe, expect, it } from "@effect/vitest"
import type { HttpServerResponse } from "effect/http"
import { AuthFailure } from "../../src/auth/ServiceAuth.ts"
import type { ClientFacing } from "../../src/domain/ClientError.ts"
import { ProfileNotFound, UnknownSupersededMemory } from "../../src/domain/errors.ts"
import { errorResponse, toApiError } from "../../src/http/OpenAiError.ts"
import { FrameworkRefusal, InternalError } from "../../src/http/RequestErrors.ts"
import { PluginRejection } from "../../src/plugins/Plugin.ts"
import { UpstreamError } from "../../src/providers/errors.ts"

const bodyOf = (response: HttpServerResponse.HttpServerResponse): unknown =>
  response.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(response.body.body)) : undefined

/** What a client receives for an error: status, headers and the OpenAI-shaped body. */
const received = (error: ClientFacing) => {
  const response = errorResponse(error)
  return { status: response.status, headers: response.headers, body: bodyOf(response) }
}

describe("error responses", () => {
  it("give each error its own status, OpenAI type, code, message and param", () => {
    expect(received(new UnknownSupersededMemory({ memoryIds: ["a", "b", "c", "d", "e", "f"] }))).toMatchObject({
      status: 400,
      body: {
        error: {
          type: "invalid_request_error",
          code: "invalid_supersedes",
          message: "supersedes names memories this profile does not have: a, b, c, d, e",
          param: "supersedes"
        }
      }
    })
    expect(received(new ProfileNotFound({ ref: "alice" })).body).toEqual({
      error: {
        type: "not_found_error",
        code: "profile_not_found",
        message: "No profile with id or external id 'alice'",
        param: null
      }
    })
  })

  it("answer a key of the other kind with 403 and a challenge naming the scope", () => {
    expect(received(new AuthFailure({ code: "insufficient_scope", message: "wrong kind" }))).toMatchObject({
      status: 403,
      headers: { "www-authenticate": `Bearer error="insufficient_scope"` },
      body: { error: { type: "permission_error", code: "insufficient_scope" } }
    })
    expect(received(new AuthFailure({ code: "missing_api_key", message: "no key" }))).toMatchObject({
      status: 401,
      headers: { "www-authenticate": "Bearer" },
      body: { error: { type: "authentication_error" } }
    })
  })

  it("keep a provider's error status and type, and relay its headers", () => {
    const error = new UpstreamError({
      status: 429,
      message: "Slow down",
      upstreamType: "tokens",
      upstreamCode: "rate_limit_exceeded",
      param: null,
      headers: { "retry-after": "7" }
    })
    expect(received(error)).toMatchObject({
      status: 429,
      headers: { "retry-after": "7" },
      body: {
        error: { type: "tokens", code: "upstream_error", message: "Slow down (upstream code: rate_limit_exceeded)" }
      }
    })
  })

  it("never answer a plugin's or a provider's non-error status as is", () => {
    expect(received(new PluginRejection({ status: 200, code: "blocked", message: "no" })).status).toBe(400)
    const upstream = new UpstreamError({
      status: 302,
      message: "moved",
      upstreamType: null,
      upstreamCode: null,
      param: null,
      headers: {}
    })
    expect(received(upstream)).toMatchObject({ status: 502, body: { error: { type: "server_error" } } })
  })

  it("show a framework's 4xx text but never its 5xx text", () => {
    const refusal = (status: number, text: string) =>
      received(new FrameworkRefusal({ status, text, method: "PUT", path: "/v1/models" })).body
    expect(refusal(405, "")).toMatchObject({
      error: { code: "method_not_allowed", message: "Request failed with status 405" }
    })
    expect(refusal(404, "")).toMatchObject({ error: { code: "not_found", message: "Unknown route: PUT /v1/models" } })
    expect(refusal(415, "Expected JSON")).toMatchObject({
      error: {
        code: "unsupported_media_type",
        message: "Expected JSON; send JSON with 'Content-Type: application/json'"
      }
    })
    expect(refusal(502, "connect ECONNREFUSED 10.0.0.7:5432")).toMatchObject({
      error: { code: "internal_error", message: "Request failed with status 502" }
    })
    expect(received(new InternalError({ requestId: "r-1" })).body).toMatchObject({
      error: { type: "server_error", code: "internal_error", message: "Internal server error (request id r-1)" }
    })
  })

  it("become the management API error of their own status", () => {
    const apiError = toApiError(new ProfileNotFound({ ref: "bob" }))
    expect(apiError.status).toBe(404)
    expect(apiError.error).toEqual({
      type: "not_found_error",
      code: "profile_not_found",
      message: "No profile with id or external id 'bob'",
      param: null
    })
  })
})
