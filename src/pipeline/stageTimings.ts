import { Clock, Effect } from "effect"

/** When the current span started (now, outside a span or with the tracer off: its spans have no times). */
export const currentSpanStart: Effect.Effect<bigint> = Effect.currentSpan.pipe(
  Effect.flatMap((span) =>
    span.status.startTime === 0n ? Clock.currentTimeNanos : Effect.succeed(span.status.startTime)
  ),
  Effect.catch(() => Clock.currentTimeNanos)
)

/** Milliseconds since `start` (a span's start time). */
export const millisSince = (start: bigint): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
