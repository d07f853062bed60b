import { FindMyWay, type HttpServerRequest } from "effect/http"
import type { ErrorFormat } from "../http/OpenAiError.ts"
import { adapters } from "./adapters.ts"

/** Each API's path and the paths below it, with the error format its clients read (the router's own matcher). */
const formats = FindMyWay.make<ErrorFormat>()
for (const adapter of Object.values(adapters)) {
  formats.all(adapter.path, adapter.errorFormat)
  formats.all(`${adapter.path}/*`, adapter.errorFormat)
}

/**
 * The error body a request's client reads: Anthropic's SDKs (which always name `anthropic-version`)
 * get Anthropic's `{"type": "error", "error": {"type", "message"}}`, and so does any call to an API
 * whose adapter says so (`/v1/messages` and the paths below it); everyone else OpenAI's. Both carry
 * the same message, code and param.
 */
export const errorFormatOf = (request: Pick<HttpServerRequest.HttpServerRequest, "url" | "headers">): ErrorFormat =>
  request.headers["anthropic-version"] !== undefined
    ? "anthropic"
    : (formats.find("GET", request.url)?.handler ?? "openai")
