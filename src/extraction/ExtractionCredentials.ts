import { Context, Effect, Layer, Predicate, type Redacted, Schema } from "effect"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { KeyBindings } from "../keys/KeyBindings.ts"
import { providerNames } from "../providers/providers.ts"
import { UpstreamConfig, type UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import { ExtractionConfig } from "./ExtractionConfig.ts"
import { ExtractionCallFailed } from "./ExtractionModel.ts"

/**
 * The key that made a turn was revoked before the turn was extracted, and its provider key was the one
 * extraction would have gone with: the job fails at once (no retry would change that) rather than go
 * with the operator's key, on the operator's account, for a tenant that brought its own.
 */
export class ExtractionKeyRevoked extends Schema.TaggedError<ExtractionKeyRevoked>()("ExtractionKeyRevoked", {
  message: Schema.String
}) {}

/** `https://Host/v1/` and `https://host/v1` are one endpoint. */
const endpoint = (url: string) => new URL(url).href.replace(/\/+$/, "")

/**
 * Whose key a job's call to the extraction model goes with. A turn made with a key bound to a provider
 * key goes with that provider key when the extraction model is called on that very provider (its
 * configured base URL is `EXTRACTION_BASE_URL`, or the default the extraction endpoint falls back
 * to): the tenant's turns are read on the tenant's account. Any other job, or a provider the
 * extraction model is not on, goes with the operator's extraction key (`undefined` here).
 */
export class ExtractionCredentials extends Context.Service<
  ExtractionCredentials,
  {
    readonly forJob: (
      job: ClaimedJob
    ) => Effect.Effect<Redacted.Redacted<string> | undefined, ExtractionCallFailed | ExtractionKeyRevoked>
  }
>()("gateway/extraction/ExtractionCredentials") {
  static readonly layer = Layer.effect(
    ExtractionCredentials,
    Effect.gen(function* () {
      const bindings = yield* KeyBindings
      const upstream = yield* UpstreamConfig
      const extraction = endpoint((yield* ExtractionConfig).baseUrl)
      const servesExtraction = (provider: UpstreamProvider) => endpoint(upstream[provider].baseUrl) === extraction
      const anyServes = providerNames.some(servesExtraction)

      const forJob = Effect.fnUntraced(function* (job: ClaimedJob) {
        // Nothing to look up when no bound key could be used.
        if (job.keyId === null || !anyServes) return undefined
        const binding = yield* bindings.of(job.keyId)
        switch (binding._tag) {
          case "Bound":
            return servesExtraction(binding.upstream.provider) ? binding.upstream.apiKey : undefined
          case "Unbound":
            return undefined
          case "Unopenable":
            // The operator's configuration, not the key, is wrong: retried, and retryable once fixed.
            return yield* new ExtractionCallFailed({
              message: `the provider key bound to key ${job.keyId} cannot be opened: KEY_ENCRYPTION_KEY is not the one it was sealed with`
            })
          case "Revoked":
            // A key whose row is gone (`null`) may have been bound to the provider extraction uses.
            if (Predicate.isNotNull(binding.provider) && !servesExtraction(binding.provider)) return undefined
            return yield* new ExtractionKeyRevoked({
              message:
                `the key that made this turn (${job.keyId}) was revoked before its extraction: ` +
                "its provider key is no longer used, and the operator's is not used in its place"
            })
        }
      })

      return ExtractionCredentials.of({ forJob })
    })
  ).pipe(Layer.provide(KeyBindings.layer))
}
