/** The part of the extraction settings that paces retries. */
export interface RetrySettings {
  readonly retryBaseMs: number
  readonly retryMaxMs: number
}

/** How far a delay is spread either way, so jobs that failed together do not all retry together. */
const SPREAD = 0.2

/**
 * How long a job waits before its next attempt, after `attempts` failed ones: `retryBaseMs`,
 * doubled with every further attempt up to `retryMaxMs`, then moved by up to ±20 % as `jitter`
 * (a number in [0, 1), 0.5 being the middle) says.
 */
export const retryDelayMs = (attempts: number, settings: RetrySettings, jitter: number): number => {
  const base = Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** Math.max(0, attempts - 1))
  return Math.round(base * (1 - SPREAD + jitter * 2 * SPREAD))
}
