import { Effect, Predicate, Schema } from "effect"
import { CliError } from "effect/cli"
import { HttpClientError } from "effect/http"
import { AlreadyReported } from "./CliFailure.ts"

const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, code: Schema.optionalKey(Schema.NullOr(Schema.String)) })
})

/** Scheme, host and port: what `--url` names, never credentials. */
const originOf = (url: string) => (URL.canParse(url) ? new URL(url).origin : "(an invalid URL)")

const fromBody = (status: number, body: unknown) => {
  const decoded = Schema.decodeUnknownOption(ErrorBody)(body)
  return decoded._tag === "Some"
    ? `${status} ${decoded.value.error.code ?? ""}: ${decoded.value.error.message}`.replace(" :", ":")
    : `the gateway answered ${status}`
}

/**
 * A command's failure as one line for the user, or `undefined` when it has been shown already (the
 * CLI's own parse errors and help). The gateway's answers keep their status, code and message.
 */
export const describeFailure = (error: unknown): Effect.Effect<string | undefined> => {
  if (CliError.isCliError(error) || error instanceof AlreadyReported) return Effect.succeed(undefined)
  if (HttpClientError.isHttpClientError(error)) {
    const response = error.response
    if (response === undefined)
      return Effect.succeed(`cannot reach the gateway at ${originOf(error.request.url)} (is it running? --url)`)
    return response.json.pipe(
      Effect.map((body) => fromBody(response.status, body)),
      Effect.orElseSucceed(() => `the gateway answered ${response.status}`)
    )
  }
  // The management API's declared errors: OpenAI-shaped, with their status.
  if (Predicate.hasProperty(error, "status") && Predicate.hasProperty(error, "error"))
    return Effect.succeed(fromBody(Number(error.status), { error: error.error }))
  if (Predicate.hasProperty(error, "message") && typeof error.message === "string") return Effect.succeed(error.message)
  return Effect.succeed(String(error))
}
