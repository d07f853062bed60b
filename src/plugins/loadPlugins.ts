import { stat } from "node:fs/promises"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Effect, Schema } from "effect"
import { isPlugin } from "./Plugin.ts"

export class PluginLoadError extends Schema.TaggedError<PluginLoadError>()("PluginLoadError", {
  message: Schema.String
}) {}

const isPath = (specifier: string) => specifier.startsWith(".") || specifier.startsWith("/")

/** A folder is loaded through its index file, as a package would be. */
const moduleUrl = (specifier: string) =>
  Effect.gen(function* () {
    if (!isPath(specifier)) return specifier
    const absolute = path.resolve(specifier)
    const info = yield* Effect.promise(() =>
      stat(absolute).then(
        (s) => s,
        () => undefined
      )
    )
    if (info === undefined) {
      return yield* new PluginLoadError({ message: `PLUGINS: ${specifier}: no such file or folder (${absolute})` })
    }
    if (!info.isDirectory()) return pathToFileURL(absolute).href
    for (const index of ["index.ts", "index.js", "index.mjs"]) {
      const file = path.join(absolute, index)
      if (
        yield* Effect.promise(() =>
          stat(file).then(
            () => true,
            () => false
          )
        )
      )
        return pathToFileURL(file).href
    }
    return yield* new PluginLoadError({ message: `PLUGINS: ${specifier}: the folder has no index.ts or index.js` })
  })

/** Imports the modules named in `PLUGINS`; each must export a plugin as `default` or `plugin`. */
export const loadPlugins = (specifiers: ReadonlyArray<string>) =>
  Effect.forEach(specifiers, (specifier) =>
    Effect.gen(function* () {
      const url = yield* moduleUrl(specifier)
      const module = yield* Effect.tryPromise({
        try: () => import(url) as Promise<Record<string, unknown>>,
        catch: (cause) =>
          new PluginLoadError({
            message: `PLUGINS: ${specifier}: cannot be imported (${cause instanceof Error ? cause.message : String(cause)})`
          })
      })
      const candidate = module["default"] ?? module["plugin"]
      if (!isPlugin(candidate)) {
        return yield* new PluginLoadError({
          message: `PLUGINS: ${specifier}: exports no plugin (expected \`export default definePlugin({ name, hooks })\`)`
        })
      }
      return candidate
    })
  )
