export type BreakerState = "closed" | "open" | "half_open"

/** `gateway_route_breaker_open`'s value for each state. */
export const breakerGaugeValue: Readonly<Record<BreakerState, number>> = { closed: 0, half_open: 0.5, open: 1 }

export interface BreakerSettings {
  /** Consecutive failed attempts that open the breaker. */
  readonly failures: number
  /** How long it stays open before one request may probe the target again. */
  readonly cooldownMs: number
}

/**
 * One routed target's circuit breaker, on this replica: closed while the target answers; open after
 * `failures` attempts in a row failed, when requests go to the next target without trying this one;
 * after `cooldownMs`, half-open: one request probes it, and its outcome closes or reopens it. Only
 * failures that say the target is unwell count (no connection, timeouts, 5xx, 429, a refused key or
 * model), never a request the provider found wrong.
 */
export class CircuitBreaker {
  private inRow = 0
  private openedAt: number | undefined
  private probing = false

  private readonly settings: BreakerSettings
  /** Told of every change of state (the gauge). */
  private readonly onChange: (state: BreakerState) => void

  constructor(settings: BreakerSettings, onChange: (state: BreakerState) => void = () => {}) {
    this.settings = settings
    this.onChange = onChange
  }

  state(now: number): BreakerState {
    if (this.openedAt === undefined) return "closed"
    return now - this.openedAt >= this.settings.cooldownMs ? "half_open" : "open"
  }

  /** Whether a request may try the target now: always when closed; when half-open, the first one only (the probe). */
  admit(now: number): boolean {
    const state = this.state(now)
    if (state === "closed") return true
    if (state === "open" || this.probing) return false
    this.probing = true
    this.onChange("half_open")
    return true
  }

  succeeded(): void {
    const wasOpen = this.openedAt !== undefined
    this.inRow = 0
    this.openedAt = undefined
    this.probing = false
    if (wasOpen) this.onChange("closed")
  }

  failed(now: number): void {
    this.inRow++
    if (this.probing || this.inRow >= this.settings.failures) {
      const wasOpen = this.openedAt !== undefined && !this.probing
      this.openedAt = now
      this.probing = false
      if (!wasOpen) this.onChange("open")
    }
  }

  /** A probe that ended without an outcome (the client went away): the next request probes instead. */
  abandoned(): void {
    this.probing = false
  }
}
