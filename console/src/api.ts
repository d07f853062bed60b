/**
 * The management API as the console calls it: the key from session storage as a bearer token, the
 * namespace chosen in the header as `X-Service-Namespace`, answers as JSON, errors as `ApiError` with
 * the gateway's OpenAI-shaped message and code.
 */

const KEY_STORAGE = "gateway-console-key"
const NAMESPACE_STORAGE = "gateway-console-namespace"

/** The key typed at sign-in, for this tab only (session storage: never a URL, gone with the tab). */
export const storedKey = (): string | null => sessionStorage.getItem(KEY_STORAGE)
export const storeKey = (key: string) => sessionStorage.setItem(KEY_STORAGE, key)
/** Signing out forgets the key and the namespace chosen with it. */
export const forgetKey = () => {
  sessionStorage.removeItem(KEY_STORAGE)
  sessionStorage.removeItem(NAMESPACE_STORAGE)
}

/**
 * A key held in the database (`pmg_…`) acts in its own namespace only: the console then sends no
 * namespace and offers no choice. The environment's admin key (or none, on an open gateway) sees them all.
 */
export const namespaceKey = (key: string | null = storedKey()): boolean => key?.startsWith("pmg_") === true

/** The namespace every call is scoped to, for this tab; `null`: all of them (the global admin's view). */
export const storedNamespace = (): string | null => (namespaceKey() ? null : sessionStorage.getItem(NAMESPACE_STORAGE))
/** The console shows every namespace at once: profiles, keys and webhooks then say which one they are in. */
export const seesAllNamespaces = (): boolean => !namespaceKey() && storedNamespace() === null
export const storeNamespace = (namespace: string | null) =>
  namespace === null
    ? sessionStorage.removeItem(NAMESPACE_STORAGE)
    : sessionStorage.setItem(NAMESPACE_STORAGE, namespace)

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly param: string | null
  constructor(status: number, message: string, code: string, param: string | null) {
    super(message)
    this.status = status
    this.code = code
    this.param = param
  }
}

/** Told when the key stops being accepted, so the console can ask for it again. */
const signedOutListeners = new Set<() => void>()
export const onSignedOut = (listener: () => void) => {
  signedOutListeners.add(listener)
  return () => {
    signedOutListeners.delete(listener)
  }
}

const authorization = (key: string | null): Record<string, string> =>
  key === null || key === "" ? {} : { authorization: `Bearer ${key}` }

const scoped = (namespace: string | null): Record<string, string> =>
  namespace === null ? {} : { "x-service-namespace": namespace }

/** Told when something may have added a namespace (a key or webhook created for one), so the switcher lists it. */
const namespacesChangedListeners = new Set<() => void>()
export const onNamespacesChanged = (listener: () => void) => {
  namespacesChangedListeners.add(listener)
  return () => {
    namespacesChangedListeners.delete(listener)
  }
}
export const namespacesChanged = () => {
  for (const listener of namespacesChangedListeners) listener()
}

/**
 * A request with the stored key, in the namespace chosen in the header (or with the key given, to try it
 * at sign-in, in none; `namespace` null: across all of them, as the switcher lists them).
 */
export const request = async <T>(
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
  key: string | null = storedKey(),
  namespace: string | null = key === storedKey() ? storedNamespace() : null
): Promise<T> => {
  const stored = key === storedKey()
  const response = await fetch(path, {
    method,
    headers: {
      ...authorization(key),
      ...scoped(namespace),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  const json: unknown = text === "" ? undefined : JSON.parse(text)
  if (!response.ok) {
    const error = (json as { error?: { message?: string; code?: string; param?: string | null } } | undefined)?.error
    // The key itself is refused (not an action it may not take, such as another namespace's): sign in again.
    if ((response.status === 401 || error?.code === "insufficient_scope") && stored) {
      for (const listener of signedOutListeners) listener()
    }
    throw new ApiError(
      response.status,
      error?.message ?? `The gateway answered ${response.status}`,
      error?.code ?? "unknown",
      error?.param ?? null
    )
  }
  return json as T
}

/** The Prometheus text of `/metrics`. */
export const metricsText = async (): Promise<string> => {
  const response = await fetch("/metrics", { headers: authorization(storedKey()) })
  if (!response.ok)
    throw new ApiError(response.status, `The gateway answered ${response.status}`, "metrics_unavailable", null)
  return response.text()
}

export const profilePath = (id: string) => `/api/profiles/${encodeURIComponent(id)}`

/**
 * The routes (`GET /api/routes`): the global admin's only, whatever namespace the console is scoped to,
 * so asked without one (a namespace's own admin key gets 403 `routes_not_allowed`).
 */
export const loadRoutes = (): Promise<RoutesView> =>
  request<RoutesView>("GET", "/api/routes", undefined, storedKey(), null)

// ---- what the API answers (written from its contract, /openapi.json) ----------------------------

export interface Profile {
  readonly id: string
  readonly namespace: string
  readonly externalId: string
  readonly summary: string | null
  readonly summaryVersion: number
  readonly summaryUpdatedAt: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface ListedProfile extends Profile {
  readonly counts: { readonly traits: number; readonly memories: number; readonly messages: number }
  readonly lastActivityAt: string | null
}

export interface Trait {
  readonly key: string
  readonly value: unknown
  readonly valueType: string
  readonly category: string
  readonly confidence: number
  readonly source: "manual" | "extracted"
  readonly createdAt: string
  readonly updatedAt: string
}

export interface TraitChange {
  readonly oldValue: unknown
  readonly newValue: unknown
  readonly confidence: number | null
  readonly source: "manual" | "extracted"
  readonly jobId: string | null
  readonly createdAt: string
}

/**
 * How a trait key is typed, as the gateway's trait schema declares it: an `enum` trait takes one of
 * `enumValues`. Read from `TRAIT_DEFINITIONS_PATH`.
 */
export interface TraitDefinition {
  readonly key: string
  readonly valueType: string
  readonly enumValues: ReadonlyArray<string>
  readonly category: string
  readonly description: string
}

/**
 * Where the gateway lists its trait schema's definitions (`{ definitions: TraitDefinition[] }`). A gateway
 * that does not (404) leaves every trait value a text field; the gateway checks each value anyway.
 */
export const TRAIT_DEFINITIONS_PATH = "/api/trait-definitions"

export const MEMORY_TYPES = ["fact", "preference", "event", "context"] as const
export type MemoryType = (typeof MEMORY_TYPES)[number]

export interface Memory {
  readonly id: string
  readonly content: string
  readonly type: MemoryType
  readonly importance: number
  readonly decayFactor: number
  readonly createdAt: string
  readonly lastAccessedAt: string | null
  readonly cues: ReadonlyArray<string>
  readonly occurredAt: string | null
  readonly supersededBy: string | null
  readonly tags: ReadonlyArray<string>
  readonly metadata: Readonly<Record<string, unknown>>
}

/** What `POST …/memories` takes (the fields the console offers). */
export interface NewMemory {
  readonly content: string
  readonly type: MemoryType
  readonly importance: number
  readonly tags: ReadonlyArray<string>
}

export interface RankedMemory extends Memory {
  readonly score: number
  /** Above the relevance floor. */
  readonly relevant: boolean
  /** A request with this message would carry it (the scores and the token budget decide). */
  readonly injected: boolean
}

export interface SummaryVersion {
  readonly version: number
  readonly summary: string
  readonly source: "manual" | "extracted"
  readonly createdAt: string
}

export interface Turn {
  readonly id: string
  readonly role: string
  readonly content: string
  readonly toolCalls: unknown
  readonly createdAt: string
}

/** A thread as listed (`X-Service-Thread-Id`): how many messages it has, when it was first and last used. */
export interface ThreadSummary {
  readonly threadId: string
  readonly messages: number
  readonly firstAt: string
  readonly lastAt: string
}

/** A message of a thread, as recorded. */
export interface ThreadMessage {
  readonly id: string
  readonly role: string
  readonly content: string
  /** An assistant message's tool calls, in the OpenAI shape (`[{ id, type, function: { name, arguments } }]`). */
  readonly toolCalls: unknown
  /** The call a `tool` message answers. */
  readonly toolCallId: string | null
  readonly createdAt: string
}

export interface Preview {
  readonly context: string | null
  readonly receipt: Record<string, unknown> | null
  /** A plugin would refuse the request (or a required one fail): what the client would get. */
  readonly refusal: { readonly status: number; readonly code: string; readonly message: string } | null
}

export type JobStatus = "pending" | "running" | "succeeded" | "failed"

/**
 * Why a pending job has not run yet: it waits for a worker, its profile's hourly budget
 * (`EXTRACTION_JOBS_PER_PROFILE_PER_HOUR`) is spent, or an attempt failed and the next is due at `runAfter`.
 */
export type JobWaitReason = "queued" | "deferred" | "retrying"

export interface Job {
  readonly id: string
  /** `null` for a webhook delivery (its event names the profile, which may since be erased). */
  readonly profileId: string | null
  /** The webhook a delivery (`kind: "webhook"`) is for; absent or `null` for every other kind. */
  readonly webhookId?: string | null
  /** The user id of the job's profile; `null` for a webhook delivery. */
  readonly externalId: string | null
  readonly kind: string
  readonly status: JobStatus
  /** Why a pending job waits; `null` unless pending. */
  readonly waitReason: JobWaitReason | null
  readonly attempts: number
  readonly lastError: string | null
  /** When a pending job may run next. */
  readonly runAfter: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly finishedAt: string | null
}

export interface JobsOverview {
  readonly counts: Readonly<Record<JobStatus, number>>
  readonly oldestPendingSeconds: number | null
  readonly jobs: ReadonlyArray<Job>
}

export interface Namespace {
  readonly name: string
  readonly profiles: number
  /** Keys held in the database for it, neither revoked nor expired. */
  readonly keys: number
}

export type KeyScope = "app" | "admin"

/** The providers a key can be bound to a key of (the gateway's `ProviderName`). */
export const PROVIDERS = [
  ["openai", "OpenAI"],
  ["anthropic", "Anthropic"]
] as const
export type ProviderName = (typeof PROVIDERS)[number][0]

/** A key held in the database, as listed: never its secret, only its first characters. */
export interface ApiKey {
  readonly id: string
  readonly namespace: string
  readonly scope: KeyScope
  readonly label: string | null
  readonly prefix: string
  readonly rateLimitPerMinute: number | null
  readonly upstreamProvider: string | null
  readonly expiresAt: string | null
  readonly createdAt: string
  readonly revokedAt: string | null
  /** Its budget, with what this period spent; `null`: none. */
  readonly budget: BudgetState | null
  /** What it used this period (its budget's, else the month) and when it was last used. */
  readonly usage: KeyUsage
}

export type BudgetPeriod = "day" | "month"

/** What `PUT /api/keys/{id}/budget` takes: a limit in tokens or in cost (never both) per UTC day or month. */
export type BudgetLimit =
  | { readonly tokens: number; readonly period: BudgetPeriod }
  | { readonly cost: number; readonly period: BudgetPeriod }

/** A budget as listed: its limit (`tokens` or `cost`), what its period spent and has left, when it starts anew. */
export interface BudgetState {
  readonly tokens?: number
  readonly cost?: number
  readonly period: BudgetPeriod
  readonly spent: number
  readonly remaining: number
  readonly resetsAt: string
}

/** A key's usage this period (its budget's, else the month). */
export interface KeyUsage {
  readonly period: BudgetPeriod
  /** The period's first day (UTC). */
  readonly since: string
  readonly requests: number
  /** Input and output tokens, the memory work done with the key's provider key included. */
  readonly tokens: number
  readonly cost: number | null
  readonly lastUsedAt: string | null
}

/** A key just created or rotated: `key` is its secret, in this answer only. */
export interface CreatedKey extends ApiKey {
  readonly key: string
}

export const WEBHOOK_EVENTS = [
  "memory.created",
  "memory.updated",
  "memory.superseded",
  "memory.deleted",
  "memory.expired",
  "trait.changed",
  "summary.updated",
  "profile.erased",
  "extraction.failed"
] as const

export interface Webhook {
  readonly id: string
  readonly namespace: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description: string | null
  readonly createdAt: string
  /** Set once the gateway stops delivering to it (absent where it never does). */
  readonly disabledAt?: string | null
}

/** A webhook just created: `secret` signs its deliveries, in this answer only. */
export interface CreatedWebhook extends Webhook {
  readonly secret: string
}

export type DeliveryStatus = "pending" | "running" | "succeeded" | "failed"

export interface Delivery {
  readonly id: string
  readonly webhookId: string
  readonly eventId: string
  readonly type: string
  readonly profile: { readonly id: string; readonly externalId: string } | null
  /** A delivery is a job of the queue: its id is the job's. */
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly lastError: string | null
  readonly responseStatus: number | null
  readonly runAfter: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly finishedAt: string | null
}

/** A routed target's circuit breaker on the replica that answered: closed, open (passed by) or half-open (one probe). */
export type BreakerState = "closed" | "open" | "half_open"

/** One target of a routed model: where it is, how it is weighed, and its breaker. */
export interface RouteTarget {
  /** `provider/model`, as the metrics and the receipt name it. */
  readonly target: string
  readonly provider: string
  readonly model: string
  readonly baseUrl: string
  /** The variable its key is read from; `null`: the key its provider is called with anyway. */
  readonly apiKeyEnv: string | null
  /** Lower first; targets of equal order share the load by weight. */
  readonly order: number
  readonly weight: number
  /** One attempt's deadline for the first byte; `null`: `UPSTREAM_FIRST_BYTE_TIMEOUT_MS`. */
  readonly timeoutMs: number | null
  readonly retries: number
  readonly breaker: BreakerState
}

/** `GET /api/routes`: the routes file and the models it routes. */
export interface RoutesView {
  /** `ROUTES_FILE`; `null`: no routes, every request goes to the provider it names. */
  readonly file: string | null
  /** `UPSTREAM_RETRIES`: what a target retries unless it says otherwise. */
  readonly retries: number
  readonly routes: ReadonlyArray<{ readonly model: string; readonly targets: ReadonlyArray<RouteTarget> }>
}

/** What `GET /api/usage` groups its rows by. */
export type UsageGrouping = "key" | "user" | "model" | "namespace" | "day" | "work"

/**
 * One group's usage over a period: the app's requests and tokens (`inputTokens` includes
 * `cachedInputTokens` and `injectedTokens`), the gateway's own memory work, and the cost of it all
 * (`null` when a model in it has no price).
 */
export interface UsageRow {
  /** The key's id, user id, model, namespace, day (`YYYY-MM-DD`) or work (`app`, `extraction`, …); `null`: none. */
  readonly group: string | null
  readonly requests: number
  readonly unreportedRequests: number
  readonly inputTokens: number
  readonly cachedInputTokens: number
  readonly cacheWriteTokens: number
  readonly outputTokens: number
  readonly reasoningTokens: number
  readonly injectedTokens: number
  readonly memoryWorkTokens: number
  readonly memoryWorkCalls: number
  readonly cost: number | null
  readonly lastAt: string | null
}

export interface UsageReport {
  /** The days covered (UTC, both included). */
  readonly period: { readonly from: string; readonly to: string }
  /** The biggest first (by tokens), or by day. */
  readonly usage: ReadonlyArray<UsageRow>
}
