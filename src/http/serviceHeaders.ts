/** The headers the gateway adds to its answers (named once: the pipeline sets them, CORS exposes them). */

/** The request's id, also on every log line. */
export const REQUEST_ID_HEADER = "x-service-request-id"
/** What was injected: the receipt, as JSON. */
export const CONTEXT_HEADER = "x-service-context"
/** `available`, or `unavailable` when the request went without memory because the database was. */
export const MEMORY_HEADER = "x-service-memory"
/** What the gateway added to the request, in milliseconds. */
export const OVERHEAD_HEADER = "x-service-overhead-ms"
/** What is left of the budgets the request is under, before it: `tokens=N`, `cost=X`, or both. */
export const BUDGET_HEADER = "x-service-budget-remaining"
/** The target that answered: `provider/model` of a routed model's target, or the provider of a direct request. */
export const UPSTREAM_HEADER = "x-service-upstream"
