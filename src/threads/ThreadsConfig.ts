import { type Config, Context } from "effect"
import { positiveInt, section } from "../config/values.ts"

/** Threads the gateway keeps for chat completions (`X-Service-Thread-Id`). */
export const threadsFromEnv = section({
  /** How much of a thread's history a request gets back, in estimated tokens (`THREAD_MAX_TOKENS`). */
  maxTokens: positiveInt("THREAD_MAX_TOKENS", 4000)
})

export type ThreadsSettings = Config.Success<typeof threadsFromEnv>

export class ThreadsConfig extends Context.Service<ThreadsConfig, ThreadsSettings>()("gateway/threads/ThreadsConfig") {}
