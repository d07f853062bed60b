/**
 * A closed-loop load generator: `concurrency` workers each send one request after another through
 * a keep-alive pool, timing every request (and, for streams, the first body chunk and the number
 * of SSE events).
 */
import { Pool } from "undici"

export interface Sample {
  readonly ms: number
  /** Time to the first body chunk (streams). */
  readonly ttftMs: number
  readonly events: number
  readonly ok: boolean
}

export interface LoadOptions {
  readonly url: string
  readonly path?: string
  /** POST unless told. */
  readonly method?: "GET" | "POST"
  /** The request body, or the body of the n-th request (none for GET). */
  readonly body?: string | ((n: number) => string)
  readonly headers?: Record<string, string>
  readonly concurrency: number
  /** Stop after this many requests in total… */
  readonly requests?: number
  /** …or after this long. */
  readonly durationMs?: number
}

export const load = async (options: LoadOptions): Promise<{ samples: Array<Sample>; elapsedMs: number }> => {
  const url = new URL(options.url)
  const pool = new Pool(url.origin, { connections: options.concurrency, pipelining: 1, keepAliveTimeout: 60_000 })
  const samples: Array<Sample> = []
  const started = performance.now()
  let issued = 0
  const more = () =>
    options.requests !== undefined
      ? issued < options.requests
      : performance.now() - started < (options.durationMs ?? 1000)

  const one = async (n: number): Promise<Sample> => {
    const t0 = performance.now()
    let ttft = 0
    let events = 0
    const response = await pool.request({
      method: options.method ?? "POST",
      path: `${url.pathname.replace(/\/$/, "")}${options.path ?? "/chat/completions"}`,
      headers: { "content-type": "application/json", ...options.headers },
      body: (typeof options.body === "function" ? options.body(n) : options.body) ?? null
    })
    for await (const part of response.body) {
      if (ttft === 0) ttft = performance.now() - t0
      const text = (part as Buffer).toString("utf8")
      for (let i = text.indexOf("data:"); i !== -1; i = text.indexOf("data:", i + 5)) events++
    }
    return { ms: performance.now() - t0, ttftMs: ttft, events, ok: response.statusCode === 200 }
  }

  const worker = async () => {
    while (more()) {
      const n = issued++
      samples.push(await one(n).catch(() => ({ ms: 0, ttftMs: 0, events: 0, ok: false })))
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker))
  const elapsedMs = performance.now() - started
  await pool.close()
  return { samples, elapsedMs }
}

export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]!
}

export const median = (values: ReadonlyArray<number>) => percentile(values, 50)
