import type { HttpServerResponse } from "effect/http"
import { errorResponse } from "../http/OpenAiError.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"

// The headers moved beside the error that reports them; re-exported for the package's public API.
export { formatReset, rateLimitHeaders } from "../ratelimit/RateLimitExceeded.ts"

/** The 429 for a request refused by one of the gateway's limits (kept for the package's public API). */
export const rateLimitResponse = (error: RateLimitExceeded): HttpServerResponse.HttpServerResponse =>
  errorResponse(error)
