import { Effect } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { errorFormatOf } from "../apis/errorFormat.ts"
import { clientError } from "../domain/ClientError.ts"
import { errorResponse } from "../http/OpenAiError.ts"

/** Where the gateway is, as the client reached it (the scheme is not known behind a proxy). */
const gatewayOf = (request: HttpServerRequest.HttpServerRequest) =>
  `http(s)://${request.headers["host"] ?? "<gateway>"}`

/** The base URL the client that sent the request needs, by its user agent. */
export const baseUrlHint = (userAgent: string | undefined, gateway: string) =>
  userAgent?.startsWith("Anthropic/") === true
    ? `The Anthropic SDK adds /v1 itself: set its baseURL to the gateway's root, ${gateway}, not ${gateway}/v1.`
    : `Set the client's base URL to ${gateway}/v1 (with /v1 once), or for the Anthropic SDK to ${gateway}.`

/**
 * `/v1/v1/…`: a client whose base URL already ends in `/v1` and that adds `/v1` itself (the Anthropic
 * SDK given `…/v1`, an OpenAI client given `…/v1/v1`). Passed through, the call would reach the
 * provider as an unknown path, with no memory and a 404 the user would blame on the gateway; it gets
 * a 404 naming the right base URL instead (in the Anthropic shape for an Anthropic client).
 */
export const BaseUrlGuard = HttpRouter.use((router) =>
  router.add(
    "*",
    "/v1/v1/*",
    Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      errorResponse(
        {
          clientError: clientError(
            404,
            "wrong_base_url",
            `${request.method} ${request.url.split("?")[0]} has /v1 twice. ${baseUrlHint(request.headers["user-agent"], gatewayOf(request))}`
          )
        },
        errorFormatOf(request)
      )
    )
  )
)
