import { FindMyWay, type HttpServerRequest } from "effect/http"
import type { ErrorFormat } from "../http/OpenAiError.ts"
import { clientProvider, providerOf } from "../providers/providers.ts"
import { adapters } from "./adapters.ts"

/** Each API's path and the paths below it, with the error format its clients read (the router's own matcher). */
const formats = FindMyWay.make<ErrorFormat>()
for (const adapter of Object.values(adapters)) {
  formats.all(adapter.path, adapter.errorFormat)
  formats.all(`${adapter.path}/*`, adapter.errorFormat)
}

/**
 * The error body a request's client reads: a provider's own SDKs get its format (`clientProvider`:
 * Anthropic's, which always name `anthropic-version`, get `{"type": "error", "error": {"type", "message"}}`),
 * and so does any call to an API whose adapter says so (`/v1/messages` and the paths below it); everyone
 * else OpenAI's. Both carry the same message, code and param.
 */
export const errorFormatOf = (request: Pick<HttpServerRequest.HttpServerRequest, "url" | "headers">): ErrorFormat => {
  const own = clientProvider(request.headers)
  return own !== undefined ? providerOf(own).errorFormat : (formats.find("GET", request.url)?.handler ?? "openai")
}
