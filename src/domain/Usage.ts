import { Context, Schema } from "effect"
import type { TokenUsage } from "./TokenUsage.ts"

/**
 * Why the provider was called: `app`, a request an app sent through the gateway; the others, the
 * memory work the gateway does on its own (reading turns, rewriting profile summaries, writing recall
 * cues, summarising threads, embedding through a provider).
 */
export const UsageWork = Schema.Literals(["app", "extraction", "summary", "cues", "thread_summary", "embedding"])
export type UsageWork = typeof UsageWork.Type

/** The memory work's kinds: everything but `app`. */
export type MemoryWork = Exclude<UsageWork, "app">

/**
 * One provider call's tokens as the gateway records them, with whom they are for. Who is not known is
 * `undefined`: a profile's namespace and user id are then read from the profile when the row is written.
 */
export interface UsageEvent {
  readonly work: UsageWork
  readonly namespace: string | undefined
  /** The key held in the database that made the request; `undefined`: the environment's key, or memory work. */
  readonly keyId: string | undefined
  /** The app's user id (the profile's external id). */
  readonly userId: string | undefined
  readonly profileId: string | undefined
  readonly provider: string
  /** The API the provider was called by (`chat.completions`, `responses`, `messages`, `embeddings`). */
  readonly api: string
  /** The model as the request named it (what a price list names). */
  readonly model: string
  /** The provider's figures; `undefined`: the answer carried none (counted as a request with no tokens). */
  readonly usage: TokenUsage | undefined
  /** The memory the gateway injected into the request, in estimated tokens (`X-Service-Context`). */
  readonly injected: number
}

/**
 * Whose memory work runs here: set around a profile's job, so that the calls the job makes (the
 * extraction model, embeddings) are recorded as that profile's namespace's memory work.
 */
export const UsageAttribution = Context.Reference<
  { readonly profileId: string; readonly keyId: string | undefined } | undefined
>("gateway/domain/UsageAttribution", { defaultValue: () => undefined })
