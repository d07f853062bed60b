/**
 * Holds streaming chat completions open: resolves once every one of them has received its first
 * chunk (so the proxy has set up its whole stream path), and keeps them open, their further chunks
 * read and dropped, until `close` aborts them all.
 */
import { Pool } from "undici"

export interface OpenStreams {
  readonly close: () => Promise<void>
}

export const openStreams = async (options: {
  readonly url: string
  readonly body: string
  readonly headers?: Record<string, string>
  readonly count: number
}): Promise<OpenStreams> => {
  const url = new URL(options.url)
  const pool = new Pool(url.origin, { connections: options.count, pipelining: 1 })
  const abort = new AbortController()
  const firstChunk = async () => {
    const response = await pool.request({
      method: "POST",
      path: `${url.pathname.replace(/\/$/, "")}/chat/completions`,
      headers: { "content-type": "application/json", ...options.headers },
      body: options.body,
      signal: abort.signal
    })
    if (response.statusCode !== 200) throw new Error(`a stream was answered ${response.statusCode}`)
    // Aborting later makes the body fail: that is how these streams end.
    response.body.on("error", () => {})
    await new Promise<void>((resolve, reject) => {
      response.body.once("data", () => resolve())
      response.body.once("end", () => reject(new Error("a stream ended while it was to be held open")))
    })
    response.body.on("data", () => {})
  }
  try {
    await Promise.all(Array.from({ length: options.count }, firstChunk))
  } catch (error) {
    abort.abort()
    await pool.destroy()
    throw error
  }
  return {
    close: async () => {
      abort.abort()
      await pool.destroy()
    }
  }
}
