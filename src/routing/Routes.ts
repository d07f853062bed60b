import { watch } from "node:fs"
import { readFile } from "node:fs/promises"
import { dirname, resolve } from "node:path"
import { Config, Context, Effect, Layer, Metric, Option, Queue, type Redacted, Result, Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import {
  labelled,
  routeBreakerOpen,
  routeFallbacks,
  upstreamAttempts,
  upstreamRetries
} from "../observability/metrics.ts"
import type { ProviderName } from "../providers/ProviderName.ts"
import { splitBaseUrl } from "../upstream/relayHeaders.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { ATTEMPT_OUTCOMES } from "./attemptFailure.ts"
import { type BreakerState, breakerGaugeValue, CircuitBreaker } from "./CircuitBreaker.ts"
import { parseRoutesFile } from "./RoutesFile.ts"
import { RoutingConfig } from "./RoutingConfig.ts"
import type { Ranked } from "./targetOrder.ts"

/** `ROUTES_FILE` cannot be read or is not a routes file: the gateway does not start (a reload keeps the routes it had). */
export class RoutesFileInvalid
  extends Schema.TaggedError<RoutesFileInvalid>()("RoutesFileInvalid", {
    message: Schema.String
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, "invalid_routes_file", this.message)
  }
}

/** One target of a loaded route, with its key read and its breaker. */
export interface RoutedTarget extends Ranked {
  readonly route: string
  /** `provider/model`, as metrics and the receipt name it. */
  readonly label: string
  readonly provider: ProviderName
  readonly model: string
  readonly baseUrl: string
  /** Set when the file gives one (`baseUrl`); else the provider's configured base URL is used. */
  readonly endpoint: { readonly origin: string; readonly prefix: string } | undefined
  /** From the variable `apiKeyEnv` names; none: the key the provider is called with anyway. */
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly apiKeyEnv: string | undefined
  /** A key held in the gateway whose bound provider key this target uses (looked up per request: a revoked one is passed by). */
  readonly keyId: string | undefined
  readonly timeoutMs: number | undefined
  readonly retries: number | undefined
  readonly breaker: CircuitBreaker
}

export interface LoadedRoute {
  readonly model: string
  readonly targets: ReadonlyArray<RoutedTarget>
}

/** Routes by the model name a request sends. */
type RouteTable = ReadonlyMap<string, LoadedRoute>

const breakerGauge = labelled(routeBreakerOpen)
const attemptsOf = labelled(upstreamAttempts)
const retriesOf = labelled(upstreamRetries)
const fallbacksOf = labelled(routeFallbacks)

/** How long a burst of file events (an editor's write, rename and chmod) settles before the file is read. */
const SETTLE_MS = 100

/**
 * The routes file (`ROUTES_FILE`): model aliases and the targets serving them. Read and checked at
 * start (the gateway does not start with a bad file); read again when the file changes or on `SIGHUP`,
 * the new table replacing the old in one step, or, when the new file is bad, the old one kept and the
 * problem logged. A target keeps its circuit breaker across reloads while its route, provider, model
 * and base URL stay the same.
 */
export class Routes extends Context.Service<
  Routes,
  {
    /** The route of a model name, if the file routes it. */
    readonly find: (model: string) => LoadedRoute | undefined
    readonly list: () => ReadonlyArray<LoadedRoute>
    /** The file, as configured; none: no routes. */
    readonly file: string | undefined
    /** Reads the file again now (what a change or `SIGHUP` does). */
    readonly reload: Effect.Effect<void, RoutesFileInvalid>
  }
>()("gateway/routing/Routes") {
  static readonly layer = Layer.effect(
    Routes,
    Effect.gen(function* () {
      const settings = yield* RoutingConfig
      const upstream = yield* UpstreamConfig
      const file = Option.getOrUndefined(settings.routesFile)
      const breakers = new Map<string, CircuitBreaker>()
      let table: RouteTable = new Map()
      const service = Routes.of({
        find: (model) => table.get(model),
        list: () => [...table.values()],
        file,
        reload: Effect.void
      })
      if (file === undefined) return service

      const invalid = (message: string) => new RoutesFileInvalid({ message: `ROUTES_FILE ${file}: ${message}` })

      // Breakers change state inside requests; the log and the gauge hear of it here.
      const transitions = yield* Queue.unbounded<{ route: string; target: string; state: BreakerState }>()
      yield* Queue.take(transitions).pipe(
        Effect.flatMap(({ route, target, state }) =>
          Effect.andThen(
            Metric.update(breakerGauge({ route, target }), breakerGaugeValue[state]),
            state === "open"
              ? Effect.logWarning(`route ${route}: ${target}'s breaker opened; requests go to the next target`)
              : Effect.logInfo(`route ${route}: ${target}'s breaker is ${state === "closed" ? "closed" : "half-open"}`)
          )
        ),
        Effect.forever,
        Effect.forkScoped
      )

      // The text last loaded: a file event that changed nothing (another file of the directory) reloads nothing.
      let loadedText: string | undefined
      const read = Effect.tryPromise({
        try: () => readFile(file, "utf8"),
        catch: (cause) => invalid(`cannot read it (${cause instanceof Error ? cause.message : String(cause)})`)
      })

      const load = (text: string) =>
        Effect.gen(function* () {
          const { document, lineAt } = yield* Effect.fromResult(Result.mapError(parseRoutesFile(text), invalid))
          const next = new Map<string, LoadedRoute>()
          for (const [routeIndex, route] of document.routes.entries()) {
            const targets: Array<RoutedTarget> = []
            const labels = new Map<string, number>()
            for (const [index, target] of route.targets.entries()) {
              const apiKey =
                target.apiKeyEnv === undefined
                  ? Option.none<Redacted.Redacted<string>>()
                  : yield* Config.Redacted(target.apiKeyEnv).pipe(
                      Config.option,
                      Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
                    )
              if (target.apiKeyEnv !== undefined && Option.isNone(apiKey))
                return yield* invalid(
                  `line ${lineAt(["routes", routeIndex, "targets", index, "apiKeyEnv"])}: ` +
                    `the variable ${target.apiKeyEnv} (the key of ${target.provider}/${target.model}) is not set`
                )
              // Two targets of one model (two keys sharing the load) are told apart: `openai/gpt-4o#2`.
              const name = `${target.provider}/${target.model}`
              const seen = (labels.get(name) ?? 0) + 1
              labels.set(name, seen)
              const label = seen === 1 ? name : `${name}#${seen}`
              const baseUrl = (target.baseUrl ?? upstream[target.provider].baseUrl).replace(/\/+$/, "")
              const identity = [route.model, label, baseUrl, target.apiKeyEnv ?? "", target.keyId ?? ""].join("\u0000")
              const breaker =
                breakers.get(identity) ??
                new CircuitBreaker(
                  { failures: settings.breakerFailures, cooldownMs: settings.breakerCooldownMs },
                  (state) => Queue.offerUnsafe(transitions, { route: route.model, target: label, state })
                )
              breakers.set(identity, breaker)
              targets.push({
                route: route.model,
                label,
                provider: target.provider,
                model: target.model,
                baseUrl,
                endpoint: target.baseUrl === undefined ? undefined : splitBaseUrl(baseUrl),
                apiKey,
                apiKeyEnv: target.apiKeyEnv,
                keyId: target.keyId,
                timeoutMs: target.timeoutMs,
                retries: target.retries,
                weight: target.weight ?? 1,
                order: target.order ?? index,
                breaker
              })
            }
            next.set(route.model, { model: route.model, targets })
          }
          // The series of every target exist from the start (an alert on a rate sees the first failure).
          for (const route of next.values())
            for (const target of route.targets) {
              const labels = { route: route.model, target: target.label }
              yield* Metric.update(breakerGauge(labels), breakerGaugeValue[target.breaker.state(Date.now())])
              yield* Metric.update(retriesOf(labels), 0)
              yield* Metric.update(fallbacksOf(labels), 0)
              for (const outcome of ATTEMPT_OUTCOMES) yield* Metric.update(attemptsOf({ ...labels, outcome }), 0)
            }
          table = next
          loadedText = text
          return next
        })

      const loaded = yield* Effect.flatMap(read, load)
      yield* Effect.logInfo(
        `routes: ${loaded.size} routed model(s) from ${file}` +
          (loaded.size === 0 ? "" : ` (${[...loaded.keys()].join(", ")})`)
      )

      const reloaded = (text: string) =>
        load(text).pipe(
          Effect.tap((routes) => Effect.logInfo(`routes reloaded: ${routes.size} routed model(s) from ${file}`)),
          Effect.tapError((error) => Effect.logError(`routes not reloaded, the previous ones stay: ${error.message}`)),
          Effect.asVoid
        )
      const reload = Effect.flatMap(read, reloaded)
      const reloadIfChanged = Effect.flatMap(read, (text) => (text === loadedText ? Effect.void : reloaded(text)))

      // A change in the file's directory (editors replace a file by renaming another over it; Kubernetes swaps
      // a ConfigMap's `..data` link) reloads it if its text changed; SIGHUP reloads it whatever it holds.
      const wakes = yield* Queue.sliding<"changed" | "signal">(1)
      const path = resolve(file)
      const onSignal = () => {
        Queue.offerUnsafe(wakes, "signal")
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const watcher = watch(dirname(path), () => {
            Queue.offerUnsafe(wakes, "changed")
          })
          watcher.on("error", () => {})
          process.on("SIGHUP", onSignal)
          return watcher
        }),
        (watcher) =>
          Effect.sync(() => {
            watcher.close()
            process.off("SIGHUP", onSignal)
          })
      )
      yield* Queue.take(wakes).pipe(
        Effect.tap(() => Effect.sleep(SETTLE_MS)),
        Effect.flatMap((first) =>
          Effect.map(Queue.clear(wakes), (more) =>
            first === "signal" || more.includes("signal") ? reload : reloadIfChanged
          )
        ),
        Effect.flatMap(Effect.ignore),
        Effect.forever,
        Effect.forkScoped
      )
      return Routes.of({ ...service, reload })
    })
  )
}
