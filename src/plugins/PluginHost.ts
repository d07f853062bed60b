import { Cause, Context, Effect, Layer, Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { corePlugin } from "./builtin/core.ts"
import { loadPlugins, PluginLoadError } from "./loadPlugins.ts"
import {
  type AnyPlugin,
  type ExtractContext,
  type ExtractContribution,
  type ForwardContext,
  type InjectContext,
  PLUGIN_NAME,
  PluginRejection,
  type PluginSection,
  type RecordedMessage,
  type ResolveUserContext,
  type TurnContext,
  type ValueType
} from "./Plugin.ts"
import { PluginConfig } from "./PluginConfig.ts"

/** A required plugin's hook failed or ran late: the request fails with a 5xx naming it. */
export class PluginFailed
  extends Schema.TaggedError<PluginFailed>()("PluginFailed", {
    plugin: Schema.String,
    hook: Schema.String,
    reason: Schema.String
  })
  implements ClientFacing<500>
{
  get clientError() {
    // The reason (whatever the plugin's error said) is logged, never shown: it may hold internal detail.
    return clientError(500, "plugin_failed", `Plugin '${this.plugin}' failed in ${this.hook}`)
  }
}

export interface PluginStats {
  readonly name: string
  readonly required: boolean
  readonly hooks: ReadonlyArray<string>
  readonly valueTypes: ReadonlyArray<string>
  readonly calls: number
  readonly failures: number
  readonly timeouts: number
}

type HookName = "resolveUser" | "inject" | "beforeForward" | "beforeRecord" | "afterResponse" | "extract"

interface LoadedPlugin {
  readonly plugin: AnyPlugin
  /** The services its layer built, if it has one; provided to every hook call. */
  readonly context: Context.Context<unknown> | undefined
  /**
   * The built-in `core` plugin: the gateway's own code, run without a time budget (on every request
   * a budget's timer and race would cost more than its hooks do).
   */
  readonly builtIn: boolean
}

class HookTimedOut extends Schema.TaggedError<HookTimedOut>()("HookTimedOut", { ms: Schema.Number }) {}

/** The fields of a rejection, whichever copy of the plugin API made it. */
const RejectionFields = Schema.Struct({
  _tag: Schema.Literal("PluginRejection"),
  status: Schema.Int,
  code: Schema.String,
  message: Schema.String
})
const isRejectionShaped = Schema.is(RejectionFields)

/**
 * A plugin's rejection, recognised by its shape rather than by class: a plugin loaded from the
 * package's built `dist/` copy has its own `PluginRejection` class while the gateway runs from
 * `src/`, and `instanceof` would take its rejection for a failure (letting the request through).
 */
const asRejection = (error: unknown): PluginRejection | undefined => {
  if (error instanceof PluginRejection) return error
  if (!isRejectionShaped(error)) return undefined
  return new PluginRejection({ status: error.status, code: error.code, message: error.message })
}

/**
 * Runs the plugins: the built-in `core` plugin first, then those named in `PLUGINS`, then those
 * given in code. Hooks run in that order. Each call has a time budget; a failure or a late answer
 * is logged, counted and skipped (the request goes on with what it had) unless the plugin is
 * `required`. A `PluginRejection` is never skipped: it is the plugin's answer to the client.
 */
export class PluginHost extends Context.Service<
  PluginHost,
  {
    readonly valueTypes: ReadonlyMap<string, ValueType>
    /** Plugins that can own the extraction of a trait (`behaviour`): those with an `extract` hook. */
    readonly behaviours: ReadonlySet<string>
    readonly resolveUser: (
      context: ResolveUserContext
    ) => Effect.Effect<string | undefined, PluginRejection | PluginFailed>
    readonly inject: (
      context: InjectContext
    ) => Effect.Effect<ReadonlyArray<PluginSection>, PluginRejection | PluginFailed>
    readonly beforeForward: (
      context: ForwardContext
    ) => Effect.Effect<Readonly<Record<string, unknown>>, PluginRejection | PluginFailed>
    readonly beforeRecord: (
      messages: ReadonlyArray<RecordedMessage>
    ) => Effect.Effect<ReadonlyArray<RecordedMessage>, PluginRejection | PluginFailed>
    /** Whether any plugin has an `afterResponse` hook (without one, nothing waits for a turn's write to call it). */
    readonly observesTurns: boolean
    readonly afterResponse: (context: TurnContext) => Effect.Effect<void>
    readonly extract: (
      context: Omit<ExtractContext, "assigned">
    ) => Effect.Effect<
      ReadonlyArray<{ readonly plugin: string; readonly contribution: ExtractContribution }>,
      PluginFailed
    >
    readonly stats: Effect.Effect<ReadonlyArray<PluginStats>>
  }
>()("gateway/plugins/PluginHost") {
  /** The host for `PLUGINS` plus the plugins given in code (embedding). */
  static readonly layer = (codePlugins: ReadonlyArray<AnyPlugin> = []) =>
    Layer.effect(
      PluginHost,
      Effect.gen(function* () {
        const config = yield* PluginConfig
        const fromEnv = yield* loadPlugins(config.specifiers)
        const plugins: ReadonlyArray<AnyPlugin> = [corePlugin, ...fromEnv, ...codePlugins]
        const seen = new Set<string>()
        for (const plugin of plugins) {
          if (!PLUGIN_NAME.test(plugin.name)) {
            return yield* new PluginLoadError({
              message: `plugin name '${plugin.name}' must be lower-case letters, digits and dashes`
            })
          }
          if (seen.has(plugin.name))
            return yield* new PluginLoadError({ message: `two plugins are named '${plugin.name}'` })
          seen.add(plugin.name)
        }

        const valueTypes = new Map<string, ValueType>()
        for (const plugin of plugins) {
          for (const valueType of plugin.valueTypes ?? []) {
            if (valueTypes.has(valueType.name)) {
              return yield* new PluginLoadError({
                message: `plugin ${plugin.name}: the value type '${valueType.name}' exists already`
              })
            }
            valueTypes.set(valueType.name, valueType)
          }
        }

        const scope = yield* Effect.scope
        const loaded: Array<LoadedPlugin> = []
        for (const plugin of plugins) {
          const context =
            plugin.layer === undefined
              ? undefined
              : yield* Layer.buildWithScope(plugin.layer, scope).pipe(
                  Effect.mapError(
                    (error) =>
                      new PluginLoadError({ message: `plugin ${plugin.name}: cannot start: ${describe(error)}` })
                  )
                )
          loaded.push({
            plugin,
            context: context as Context.Context<unknown> | undefined,
            builtIn: plugin === corePlugin
          })
        }
        if (fromEnv.length + codePlugins.length > 0) {
          yield* Effect.logInfo(`plugins: ${plugins.map((p) => p.name).join(", ")}`)
        }

        // Counted in place: hooks run on every request, and the counts are only ever read whole.
        const counters = new Map<string, { calls: number; failures: number; timeouts: number }>()
        const count = (name: string, kind: "calls" | "failures" | "timeouts") =>
          Effect.sync(() => {
            const entry = counters.get(name) ?? { calls: 0, failures: 0, timeouts: 0 }
            entry[kind]++
            counters.set(name, entry)
          })

        /** One hook call within its budget; what happens when it fails depends on the plugin. */
        const call = <A>(
          entry: LoadedPlugin,
          hook: HookName,
          run: () => Effect.Effect<A, unknown, unknown>,
          fallback: A,
          background: boolean
        ): Effect.Effect<A, PluginRejection | PluginFailed> => {
          const { plugin } = entry
          const ms = plugin.timeoutMs ?? (background ? config.backgroundTimeoutMs : config.timeoutMs)
          // A plugin without a layer requires nothing (its type says so; the list erases it), and is
          // given nothing: merging even an empty context copies the request's.
          const provided =
            entry.context === undefined
              ? (Effect.suspend(run) as Effect.Effect<A, unknown>)
              : Effect.suspend(run).pipe(Effect.provideContext(entry.context))
          const budgeted = entry.builtIn
            ? provided
            : Effect.timeoutOrElse(provided, { duration: ms, orElse: () => Effect.fail(new HookTimedOut({ ms })) })
          return budgeted.pipe(
            Effect.tap(() => count(plugin.name, "calls")),
            Effect.catchCause((cause): Effect.Effect<A, PluginRejection | PluginFailed> => {
              if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
              const error = Cause.squash(cause)
              const rejection = asRejection(error)
              if (rejection !== undefined) return Effect.fail(rejection)
              const timedOut = error instanceof HookTimedOut
              const reason = timedOut ? `timed out after ${ms} ms` : describe(error)
              return count(plugin.name, "calls").pipe(
                Effect.andThen(count(plugin.name, timedOut ? "timeouts" : "failures")),
                Effect.andThen(
                  plugin.required
                    ? Effect.logError(`plugin ${plugin.name}: ${hook} failed (required)`, cause).pipe(
                        Effect.andThen(Effect.fail(new PluginFailed({ plugin: plugin.name, hook, reason })))
                      )
                    : Effect.logWarning(`plugin ${plugin.name}: ${hook} ${reason}; skipped`).pipe(Effect.as(fallback))
                )
              )
            })
          )
        }

        const hooked = new Map<HookName, ReadonlyArray<LoadedPlugin>>()
        for (const hook of [
          "resolveUser",
          "inject",
          "beforeForward",
          "beforeRecord",
          "afterResponse",
          "extract"
        ] as const) {
          hooked.set(
            hook,
            loaded.filter((entry) => entry.plugin.hooks?.[hook] !== undefined)
          )
        }
        const withHook = (hook: HookName) => hooked.get(hook)!

        const resolveUser = (context: ResolveUserContext) =>
          Effect.reduce(
            withHook("resolveUser"),
            () => context.userId,
            (userId, entry) =>
              call(
                entry,
                "resolveUser",
                () => entry.plugin.hooks!.resolveUser!({ ...context, userId }),
                undefined,
                false
              ).pipe(Effect.map((resolved) => resolved ?? userId))
          )

        /** Each plugin's call at once; a single one (usually `core` alone) without a fiber of its own. */
        const eachAtOnce = <A, E>(
          entries: ReadonlyArray<LoadedPlugin>,
          f: (entry: LoadedPlugin) => Effect.Effect<A, E>
        ) =>
          entries.length === 1
            ? Effect.map(f(entries[0]!), (result) => [result])
            : Effect.forEach(entries, f, { concurrency: "unbounded" })

        const inject = (context: InjectContext) =>
          eachAtOnce(withHook("inject"), (entry) =>
            call(entry, "inject", () => entry.plugin.hooks!.inject!(context), [], false).pipe(
              Effect.map((sections) => sections.map((section) => ({ ...section, plugin: entry.plugin.name })))
            )
          ).pipe(Effect.map((all) => all.flat()))

        const beforeForward = (context: ForwardContext) =>
          Effect.reduce(
            withHook("beforeForward"),
            () => context.body,
            (body, entry) =>
              call(entry, "beforeForward", () => entry.plugin.hooks!.beforeForward!({ ...context, body }), body, false)
          )

        const beforeRecord = (messages: ReadonlyArray<RecordedMessage>) =>
          Effect.reduce(
            withHook("beforeRecord"),
            () => messages,
            (current, entry) =>
              call(entry, "beforeRecord", () => entry.plugin.hooks!.beforeRecord!(current), current, false)
          )

        const afterResponse = (context: TurnContext) =>
          Effect.forEach(
            withHook("afterResponse"),
            (entry) => call(entry, "afterResponse", () => entry.plugin.hooks!.afterResponse!(context), undefined, true),
            { concurrency: "unbounded", discard: true }
          ).pipe(Effect.catch(() => Effect.void))

        const extract = (context: Omit<ExtractContext, "assigned">) =>
          Effect.forEach(
            withHook("extract"),
            (entry) => {
              const assigned = [...context.definitions.values()].filter((d) => d.behaviour === entry.plugin.name)
              return call(
                entry,
                "extract",
                () => entry.plugin.hooks!.extract!({ ...context, assigned }),
                {},
                true
              ).pipe(Effect.map((contribution) => ({ plugin: entry.plugin.name, contribution })))
            },
            { concurrency: "unbounded" }
          ).pipe(
            // In the worker a rejection has nobody to answer: it counts as a failure of the plugin.
            Effect.catchTag("PluginRejection", (rejection) =>
              Effect.fail(new PluginFailed({ plugin: "unknown", hook: "extract", reason: rejection.message }))
            )
          )

        const stats = Effect.sync(() =>
          plugins.map((plugin) => ({
            name: plugin.name,
            required: plugin.required === true,
            hooks: Object.keys(plugin.hooks ?? {}),
            valueTypes: (plugin.valueTypes ?? []).map((type) => type.name),
            ...(counters.get(plugin.name) ?? { calls: 0, failures: 0, timeouts: 0 })
          }))
        )

        return PluginHost.of({
          valueTypes,
          observesTurns: withHook("afterResponse").length > 0,
          behaviours: new Set(withHook("extract").map((entry) => entry.plugin.name)),
          resolveUser,
          inject,
          beforeForward,
          beforeRecord,
          afterResponse,
          extract,
          stats
        })
      })
    )
}

const describe = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : typeof error === "object" && error !== null && "message" in error
      ? String(error.message)
      : String(error)
