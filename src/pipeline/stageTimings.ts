import { Clock, Effect } from "effect"

/** When the current span started (now, outside a span). */
export const currentSpanStart: Effect.Effect<bigint> = Effect.currentSpan.pipe(
  Effect.map((span) => span.status.startTime),
  Effect.catch(() => Clock.currentTimeNanos)
)

/** Milliseconds since `start` (a span's start time). */
export const millisSince = (start: bigint): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
