/**
 * The management API as the console calls it: the key from session storage as a bearer token,
 * answers as JSON, errors as `ApiError` with the gateway's OpenAI-shaped message and code.
 */

const KEY_STORAGE = "gateway-console-key"

/** The key typed at sign-in, for this tab only (session storage: never a URL, gone with the tab). */
export const storedKey = (): string | null => sessionStorage.getItem(KEY_STORAGE)
export const storeKey = (key: string) => sessionStorage.setItem(KEY_STORAGE, key)
export const forgetKey = () => sessionStorage.removeItem(KEY_STORAGE)

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

/** A request with the stored key (or the one given, to try it at sign-in). */
export const request = async <T>(
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
  key: string | null = storedKey()
): Promise<T> => {
  const response = await fetch(path, {
    method,
    headers: { ...authorization(key), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  const json: unknown = text === "" ? undefined : JSON.parse(text)
  if (!response.ok) {
    const error = (json as { error?: { message?: string; code?: string; param?: string | null } } | undefined)?.error
    if ((response.status === 401 || response.status === 403) && key === storedKey()) {
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

// ---- what the API answers (written from its contract, /openapi.json) ----------------------------

export interface Profile {
  readonly id: string
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
}

export interface RankedMemory extends Memory {
  readonly score: number
  readonly relevant: boolean
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

export interface Preview {
  readonly context: string | null
  readonly receipt: Record<string, unknown> | null
  /** A plugin would refuse the request (or a required one fail): what the client would get. */
  readonly refusal: { readonly status: number; readonly code: string; readonly message: string } | null
}

export type JobStatus = "pending" | "running" | "succeeded" | "failed"

export interface Job {
  readonly id: string
  readonly profileId: string
  readonly kind: string
  readonly status: JobStatus
  readonly attempts: number
  readonly lastError: string | null
  readonly createdAt: string
  readonly updatedAt: string
  readonly finishedAt: string | null
}

export interface JobsOverview {
  readonly counts: Readonly<Record<JobStatus, number>>
  readonly oldestPendingSeconds: number | null
  readonly jobs: ReadonlyArray<Job>
}
