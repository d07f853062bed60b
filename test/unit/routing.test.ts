import { Result } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  UnsupportedParameter,
  UpstreamError,
  type UpstreamFailure,
  UpstreamTimeout,
  UpstreamUnreachable
} from "../../src/providers/errors.ts"
import { backoffMs, outcomeOf, retryAfterMs } from "../../src/routing/attemptFailure.ts"
import { type BreakerState, CircuitBreaker } from "../../src/routing/CircuitBreaker.ts"
import { parseRoutesFile } from "../../src/routing/RoutesFile.ts"
import { targetOrder } from "../../src/routing/targetOrder.ts"

/** What `parseRoutesFile` says is wrong with a file (failing the test when it accepts it). */
const problemWith = (text: string): string => {
  const parsed = parseRoutesFile(text)
  if (Result.isSuccess(parsed)) throw new Error(`accepted: ${JSON.stringify(parsed.success.document)}`)
  return parsed.failure
}

const documentOf = (text: string) => {
  const parsed = parseRoutesFile(text)
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success.document
}

describe("parseRoutesFile", () => {
  it("reads a YAML file", () => {
    const yaml = [
      "# the app asks for 'smart'",
      "routes:",
      "  - model: smart",
      "    targets:",
      "      - provider: openai",
      "        model: gpt-4o",
      "        retries: 1",
      "        timeoutMs: 2000",
      "      - provider: anthropic",
      "        model: claude-sonnet",
      "        baseUrl: https://anthropic.example/v1",
      "        apiKeyEnv: ANTHROPIC_FALLBACK_KEY",
      "        weight: 2.5",
      "        order: 0",
      ""
    ].join("\n")
    expect(documentOf(yaml)).toEqual({
      routes: [
        {
          model: "smart",
          targets: [
            { provider: "openai", model: "gpt-4o", retries: 1, timeoutMs: 2000 },
            {
              provider: "anthropic",
              model: "claude-sonnet",
              baseUrl: "https://anthropic.example/v1",
              apiKeyEnv: "ANTHROPIC_FALLBACK_KEY",
              weight: 2.5,
              order: 0
            }
          ]
        }
      ]
    })
  })

  it("reads a JSON file, and an empty list of routes", () => {
    const routes = {
      routes: [
        { model: "fast", targets: [{ provider: "anthropic", model: "claude-haiku" }] },
        { model: "cheap", targets: [{ provider: "openai", model: "gpt-4o-mini", weight: 3, order: 1 }] }
      ]
    }
    expect(documentOf(JSON.stringify(routes, null, 2))).toEqual(routes)
    expect(documentOf(JSON.stringify(routes))).toEqual(routes)
    expect(documentOf('{ "routes": [] }')).toEqual({ routes: [] })
  })

  it("names the line of a YAML syntax error", () => {
    const lines = ["routes:", "  - model: smart", "    targets:", "      - provider: openai", "        model: gpt"]
    const broken = (at: number, line: string) => lines.map((l, i) => (i === at - 1 ? line : l)).join("\n")
    expect(problemWith(broken(4, "      - provider: openai: extra"))).toMatch(/^line 4: /)
    expect(problemWith(broken(5, "\t  model: gpt"))).toMatch(/^line 5: /)
    expect(problemWith(["routes:", "  - model: smart", "    model: again", "    targets: []"].join("\n"))).toMatch(
      /^line 3: /
    )
  })

  it("names the line of a JSON syntax error", () => {
    const json = ["{", '  "routes": [', '    { "model": "a", "targets": [] }', "    oops", "  ]", "}"].join("\n")
    expect(problemWith(json)).toMatch(/^line 4: /)
  })

  it("names the line and the field of a value of the wrong kind", () => {
    const yaml = [
      "routes:",
      "  - model: smart",
      "    targets:",
      "      - provider: openai",
      "        model: gpt-4o",
      "        weight: heavy",
      ""
    ].join("\n")
    expect(problemWith(yaml)).toMatch(/^line 6 \(routes\.0\.targets\.0\.weight\): /)
    const json = JSON.stringify(
      { routes: [{ model: "a", targets: [{ provider: "openai", model: "x", order: -1 }] }] },
      null,
      2
    )
    const orderLine = json.split("\n").findIndex((line) => line.includes('"order"')) + 1
    expect(problemWith(json)).toMatch(new RegExp(`^line ${orderLine} \\(routes\\.0\\.targets\\.0\\.order\\): `))
    expect(
      problemWith(
        ["routes:", "  - model: smart", "    targets:", "      - provider: mistral", "        model: m"].join("\n")
      )
    ).toMatch(/^line 4 \(routes\.0\.targets\.0\.provider\): /)
  })

  it("names the line of an unknown field", () => {
    const yaml = [
      "routes:",
      "  - model: smart",
      "    targets:",
      "      - provider: openai",
      "        model: gpt-4o",
      "        colour: blue",
      ""
    ].join("\n")
    expect(problemWith(yaml)).toMatch(/^line 6 \(routes\.0\.targets\.0\.colour\): /)
  })

  it("names the line of a model routed twice (the second time)", () => {
    const yaml = [
      "routes:",
      "  - model: smart",
      "    targets:",
      "      - provider: openai",
      "        model: gpt-4o",
      "  - model: smart",
      "    targets:",
      "      - provider: anthropic",
      "        model: claude",
      ""
    ].join("\n")
    const problem = problemWith(yaml)
    expect(problem).toMatch(/^line 6: /)
    expect(problem).toContain('"smart"')
  })

  it("refuses a route without targets", () => {
    expect(problemWith(["routes:", "  - model: smart", "    targets: []", ""].join("\n"))).toMatch(
      /^line 3 \(routes\.0\.targets\): /
    )
  })
})

/** A deterministic source of numbers in [0, 1) (mulberry32). */
const seeded = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Target {
  readonly name: string
  readonly order: number
  readonly weight: number
}

describe("targetOrder", () => {
  it("tries lower orders first, whatever the list's order", () => {
    const targets: Array<Target> = [
      { name: "c", order: 2, weight: 1 },
      { name: "a", order: 0, weight: 1 },
      { name: "b", order: 1, weight: 1 }
    ]
    expect(targetOrder(targets, seeded(1)).map((t) => t.name)).toEqual(["a", "b", "c"])
  })

  it("leaves a single target as it is", () => {
    const targets: ReadonlyArray<Target> = [{ name: "only", order: 7, weight: 0.5 }]
    expect(targetOrder(targets, () => 0.999)).toBe(targets)
  })

  it("puts every target once, orders ascending, whatever the draws", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            order: fc.integer({ min: 0, max: 3 }),
            weight: fc.double({ min: 0.001, max: 1000, noNaN: true, noDefaultInfinity: true })
          }),
          { minLength: 1, maxLength: 8 }
        ),
        fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
        (specs, draws) => {
          const targets = specs.map((spec, index) => ({ ...spec, name: `t${index}` }))
          const ordered = targetOrder(targets, () => draws.next().value)
          expect([...ordered].map((t) => t.name).sort()).toEqual(targets.map((t) => t.name).sort())
          for (let i = 1; i < ordered.length; i++)
            expect(ordered[i]!.order).toBeGreaterThanOrEqual(ordered[i - 1]!.order)
        }
      )
    )
  })

  it("shares first place by weight among targets of equal order, the others following as fallbacks", () => {
    const targets: Array<Target> = [
      { name: "heavy", order: 0, weight: 3 },
      { name: "light", order: 0, weight: 1 },
      { name: "backup", order: 1, weight: 100 }
    ]
    const random = seeded(42)
    const draws = 8000
    let heavyFirst = 0
    for (let i = 0; i < draws; i++) {
      const ordered = targetOrder(targets, random).map((t) => t.name)
      expect(ordered[2]).toBe("backup")
      expect(ordered.slice(0, 2).sort()).toEqual(["heavy", "light"])
      if (ordered[0] === "heavy") heavyFirst++
    }
    // Expected 6000 (3/4), standard deviation about 39.
    expect(heavyFirst).toBeGreaterThan(6000 - 250)
    expect(heavyFirst).toBeLessThan(6000 + 250)
  })

  it("shares first place among three weights in proportion", () => {
    const targets: Array<Target> = [
      { name: "a", order: 0, weight: 1 },
      { name: "b", order: 0, weight: 2 },
      { name: "c", order: 0, weight: 5 }
    ]
    const random = seeded(7)
    const first = new Map<string, number>()
    const draws = 8000
    for (let i = 0; i < draws; i++) {
      const name = targetOrder(targets, random)[0]!.name
      first.set(name, (first.get(name) ?? 0) + 1)
    }
    for (const target of targets) {
      const expected = (draws * target.weight) / 8
      expect(Math.abs((first.get(target.name) ?? 0) - expected)).toBeLessThan(250)
    }
  })

  it("takes the boundaries of the draw: 0 gives the first of a group, just under 1 the last", () => {
    const targets: Array<Target> = [
      { name: "a", order: 0, weight: 1 },
      { name: "b", order: 0, weight: 1 }
    ]
    expect(targetOrder(targets, () => 0).map((t) => t.name)).toEqual(["a", "b"])
    expect(targetOrder(targets, () => 0.999_999_999).map((t) => t.name)).toEqual(["b", "a"])
  })
})

describe("CircuitBreaker", () => {
  const make = (failures = 3, cooldownMs = 1000) => {
    const changes: Array<BreakerState> = []
    const breaker = new CircuitBreaker({ failures, cooldownMs }, (state) => changes.push(state))
    return { breaker, changes }
  }

  it("opens after the configured number of consecutive failures", () => {
    const { breaker, changes } = make(3)
    breaker.failed(10)
    breaker.failed(20)
    expect(breaker.state(20)).toBe("closed")
    expect(breaker.admit(20)).toBe(true)
    breaker.failed(30)
    expect(breaker.state(30)).toBe("open")
    expect(breaker.admit(31)).toBe(false)
    expect(changes).toEqual(["open"])
  })

  it("counts failures in a row only: a success resets the count", () => {
    const { breaker, changes } = make(3)
    breaker.failed(1)
    breaker.failed(2)
    breaker.succeeded()
    breaker.failed(3)
    breaker.failed(4)
    expect(breaker.state(4)).toBe("closed")
    breaker.failed(5)
    expect(breaker.state(5)).toBe("open")
    expect(changes).toEqual(["open"])
  })

  it("is half-open after the cooldown and admits exactly one probe", () => {
    const { breaker, changes } = make(2, 1000)
    breaker.failed(0)
    breaker.failed(100)
    expect(breaker.state(1099)).toBe("open")
    expect(breaker.admit(1099)).toBe(false)
    expect(breaker.state(1100)).toBe("half_open")
    expect(breaker.admit(1100)).toBe(true)
    expect(breaker.admit(1101)).toBe(false)
    expect(breaker.admit(5000)).toBe(false)
    expect(changes).toEqual(["open", "half_open"])
  })

  it("closes when the probe succeeds", () => {
    const { breaker, changes } = make(1, 500)
    breaker.failed(0)
    expect(breaker.admit(500)).toBe(true)
    breaker.succeeded()
    expect(breaker.state(501)).toBe("closed")
    expect(breaker.admit(501)).toBe(true)
    expect(breaker.admit(502)).toBe(true)
    expect(changes).toEqual(["open", "half_open", "closed"])
    // Closed again, it takes the full count to open.
    const again = make(2, 500)
    again.breaker.failed(0)
    again.breaker.failed(0)
    again.breaker.admit(500)
    again.breaker.succeeded()
    again.breaker.failed(600)
    expect(again.breaker.state(600)).toBe("closed")
  })

  it("reopens for a whole cooldown when the probe fails", () => {
    const { breaker, changes } = make(3, 500)
    for (let i = 0; i < 3; i++) breaker.failed(0)
    expect(breaker.admit(600)).toBe(true)
    breaker.failed(700)
    expect(breaker.state(700)).toBe("open")
    expect(breaker.admit(1199)).toBe(false)
    expect(breaker.state(1200)).toBe("half_open")
    expect(breaker.admit(1200)).toBe(true)
    expect(changes).toEqual(["open", "half_open", "open", "half_open"])
  })

  it("lets the next request probe when a probe is abandoned", () => {
    const { breaker } = make(1, 100)
    breaker.failed(0)
    expect(breaker.admit(100)).toBe(true)
    expect(breaker.admit(101)).toBe(false)
    breaker.abandoned()
    expect(breaker.admit(102)).toBe(true)
    expect(breaker.admit(103)).toBe(false)
  })

  it("stays closed while fewer failures than the threshold come in a row, whatever the pattern (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(fc.boolean(), { maxLength: 60 }), (failures, outcomes) => {
        const breaker = new CircuitBreaker({ failures, cooldownMs: 1_000_000 })
        let inRow = 0
        for (const failed of outcomes) {
          if (breaker.state(0) !== "closed") break
          if (failed) {
            breaker.failed(0)
            inRow++
          } else {
            breaker.succeeded()
            inRow = 0
          }
          expect(breaker.state(0)).toBe(inRow >= failures ? "open" : "closed")
        }
      })
    )
  })
})

const upstreamError = (status: number, headers: Record<string, string> = {}) =>
  new UpstreamError({ status, message: "m", upstreamType: null, upstreamCode: null, param: null, headers })

describe("outcomeOf", () => {
  it("retries what may pass: 5xx, 429, 408, no connection, no answer in time", () => {
    for (const status of [500, 502, 503, 504, 529, 429, 408])
      expect(outcomeOf(upstreamError(status)), String(status)).toBe("retry")
    expect(outcomeOf(new UpstreamUnreachable({ message: "reset" }))).toBe("retry")
    expect(outcomeOf(new UpstreamTimeout({ message: "slow" }))).toBe("retry")
  })

  it("moves on to the next target when the key or model is refused: 401, 403, 404", () => {
    for (const status of [401, 403, 404]) expect(outcomeOf(upstreamError(status)), String(status)).toBe("next")
  })

  it("gives the client a request the provider found wrong: 400, 422, other 4xx, an unsupported parameter", () => {
    for (const status of [400, 402, 409, 413, 422])
      expect(outcomeOf(upstreamError(status)), String(status)).toBe("final")
    expect(outcomeOf(new UnsupportedParameter({ param: "n", message: "n must be 1" }))).toBe("final")
  })
})

describe("retryAfterMs", () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0)

  it("reads retry-after in seconds", () => {
    expect(retryAfterMs(upstreamError(429, { "retry-after": "3" }), now)).toBe(3000)
    expect(retryAfterMs(upstreamError(429, { "retry-after": "0" }), now)).toBe(0)
    expect(retryAfterMs(upstreamError(503, { "retry-after": " 1.5 " }), now)).toBe(1500)
  })

  it("prefers retry-after-ms", () => {
    expect(retryAfterMs(upstreamError(429, { "retry-after-ms": "250" }), now)).toBe(250)
    expect(retryAfterMs(upstreamError(429, { "retry-after-ms": "250", "retry-after": "9" }), now)).toBe(250)
    // Not a number: the seconds are read instead.
    expect(retryAfterMs(upstreamError(429, { "retry-after-ms": "soon", "retry-after": "2" }), now)).toBe(2000)
  })

  it("reads an HTTP date, and a date gone by as no wait", () => {
    const later = new Date(now + 7000).toUTCString()
    expect(retryAfterMs(upstreamError(429, { "retry-after": later }), now)).toBe(7000)
    const past = new Date(now - 60_000).toUTCString()
    expect(retryAfterMs(upstreamError(429, { "retry-after": past }), now)).toBe(0)
  })

  it("is undefined when the provider did not say, or said nothing readable", () => {
    expect(retryAfterMs(upstreamError(429), now)).toBeUndefined()
    expect(retryAfterMs(upstreamError(429, { "retry-after": "" }), now)).toBeUndefined()
    expect(retryAfterMs(upstreamError(429, { "retry-after": "whenever" }), now)).toBeUndefined()
    expect(retryAfterMs(new UpstreamUnreachable({ message: "reset" }), now)).toBeUndefined()
    expect(retryAfterMs(new UpstreamTimeout({ message: "slow" }) as UpstreamFailure, now)).toBeUndefined()
  })
})

describe("backoffMs", () => {
  it("waits between half and all of base·2^(retry−1), capped at the maximum", () => {
    expect(backoffMs(1, 100, 10_000, 0)).toBe(50)
    expect(backoffMs(1, 100, 10_000, 0.999_999)).toBe(99)
    expect(backoffMs(2, 100, 10_000, 0)).toBe(100)
    expect(backoffMs(3, 100, 10_000, 0.5)).toBe(300)
    expect(backoffMs(30, 100, 10_000, 0)).toBe(5000)
  })

  it("stays within its bounds for any retry, settings and draw (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, baseMs, maxMs, random) => {
          const ceiling = Math.min(maxMs, baseMs * 2 ** (retry - 1))
          const wait = backoffMs(retry, baseMs, maxMs, random)
          expect(Number.isInteger(wait)).toBe(true)
          expect(wait).toBeGreaterThanOrEqual(Math.floor(ceiling / 2))
          expect(wait).toBeLessThanOrEqual(ceiling)
          expect(wait).toBeLessThanOrEqual(maxMs)
        }
      )
    )
  })

  it("never shortens with a further retry (for the same draw)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, baseMs, maxMs, random) => {
          expect(backoffMs(retry + 1, baseMs, maxMs, random)).toBeGreaterThanOrEqual(
            backoffMs(retry, baseMs, maxMs, random)
          )
        }
      )
    )
  })
})
