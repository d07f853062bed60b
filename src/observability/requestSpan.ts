import { Effect } from "effect"

/**
 * The span of a step every proxied request takes (a pipeline stage, the provider call):
 * `Effect.fnUntraced(body, requestSpan(name))` is `Effect.fn(name)(body)` without the call-site
 * stack `Effect.fn` captures on every call. That capture (an `Error` each time) cost 2.3% of a
 * request's instructions for the five stages alone (`npm run bench:instructions`); a failure still
 * carries the span's name.
 */
export const requestSpan = (name: string) => Effect.withSpan(name, undefined, { captureStackTrace: false })
