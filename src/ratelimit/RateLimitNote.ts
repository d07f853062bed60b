import { Context } from "effect"
import type { RateLimitState } from "./RateLimitExceeded.ts"

/**
 * The tightest limit the request being handled has met, for its `x-ratelimit-*` headers. The
 * limits are taken in different places (the key in the middleware, the user in the pipeline),
 * so the request middleware gives each request a note and writes the headers from it at the end.
 */
export class RateLimitNote {
  private tightest: RateLimitState | undefined = undefined

  record(state: RateLimitState): void {
    if (this.tightest === undefined || state.remaining < this.tightest.remaining) this.tightest = state
  }

  get current(): RateLimitState | undefined {
    return this.tightest
  }
}

/** The note of the current request; `undefined` outside the gateway's request middleware. */
export const CurrentRateLimitNote = Context.Reference<RateLimitNote | undefined>(
  "gateway/ratelimit/CurrentRateLimitNote",
  {
    defaultValue: () => undefined
  }
)
