import { Config, Context } from "effect"
import { commaList, positiveInt, section } from "../config/values.ts"
import { isNamespaceName } from "../domain/Namespace.ts"

/** How long each namespace keeps its conversation history, in days; `undefined`: for good. */
export interface Retention {
  readonly days: number | undefined
  readonly byNamespace: ReadonlyMap<string, number>
}

const DAYS = /^[1-9]\d{0,4}$/

/** One entry of `THREAD_RETENTION_DAYS`: `30` (every namespace) or `acme=7` (one namespace). */
const isRetentionEntry = (entry: string) => {
  const [left, right] = entry.split("=", 2)
  return right === undefined ? DAYS.test(entry) : isNamespaceName(left ?? "") && DAYS.test(right)
}

const retentionOf = (entries: ReadonlyArray<string>): Retention => {
  let days: number | undefined
  const byNamespace = new Map<string, number>()
  for (const entry of entries) {
    const [left, right] = entry.split("=", 2)
    if (right === undefined) days = Number(left)
    else byNamespace.set(left!, Number(right))
  }
  return { days, byNamespace }
}

/** Threads the gateway keeps for chat completions (`X-Service-Thread-Id`), and how long history is kept. */
export const threadsFromEnv = section({
  /** How much of a thread's history a request gets back, in estimated tokens (`THREAD_MAX_TOKENS`). */
  maxTokens: positiveInt("THREAD_MAX_TOKENS", 4000),
  /**
   * `THREAD_RETENTION_DAYS`: `30` keeps every namespace's thread turns, thread summaries and stored
   * Responses API responses 30 days; `30,acme=7` keeps namespace `acme`'s 7; unset: for good.
   */
  retention: commaList("THREAD_RETENTION_DAYS", {
    valid: isRetentionEntry,
    expected: "days (1–99999), and namespace=days entries, comma-separated (e.g. 30,acme=7)"
  }).pipe(Config.map(retentionOf)),
  /** How often each replica deletes what is past its retention (`THREAD_RETENTION_SWEEP_MS`). */
  sweepMs: positiveInt("THREAD_RETENTION_SWEEP_MS", 3_600_000)
})

export type ThreadsSettings = Config.Success<typeof threadsFromEnv>

export class ThreadsConfig extends Context.Service<ThreadsConfig, ThreadsSettings>()("gateway/threads/ThreadsConfig") {}
