import { Result, Schema, SchemaIssue } from "effect"
import { isNode, LineCounter, parseDocument } from "yaml"
import { HttpUrl } from "../config/values.ts"
import { ProviderName } from "../providers/ProviderName.ts"

const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))

/** An environment variable's name (the target's key is read from it, never written in the file). */
const EnvName = Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/))

/** One place a routed model can be served: a provider the gateway knows, and the model it is asked for there. */
export const RouteTarget = Schema.Struct({
  provider: ProviderName,
  model: Name,
  /** Default: the provider's configured base URL (`UPSTREAM_BASE_URL`, `ANTHROPIC_BASE_URL`). */
  baseUrl: Schema.optionalKey(HttpUrl),
  /** The variable holding the key; default: the key the provider is called with anyway. */
  apiKeyEnv: Schema.optionalKey(EnvName),
  /** Or a key held in the gateway (`POST /api/keys`) bound to a provider key: that provider key, while the key is active. */
  keyId: Schema.optionalKey(Name),
  /** Targets of equal `order` share the load by weight (default 1). */
  weight: Schema.optionalKey(Schema.Finite.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(1_000_000))),
  /** Lower first; default: the target's position in the list. */
  order: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  /** The first byte's deadline for one attempt at this target (default `UPSTREAM_FIRST_BYTE_TIMEOUT_MS`). */
  timeoutMs: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  /** Retries of this target before the next one is tried (default `UPSTREAM_RETRIES`). */
  retries: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 })))
})
export type RouteTarget = typeof RouteTarget.Type

/** A model name the app sends, and the targets that serve it, in order. */
export const Route = Schema.Struct({
  model: Name,
  targets: Schema.Array(RouteTarget).check(Schema.isMinLength(1), Schema.isMaxLength(50))
})
export type Route = typeof Route.Type

export const RoutesDocument = Schema.Struct({ routes: Schema.Array(Route).check(Schema.isMaxLength(1000)) })
export type RoutesDocument = typeof RoutesDocument.Type

/** The routes, and the line of a field (by its path) for what is found wrong with them later. */
export interface ParsedRoutes {
  readonly document: RoutesDocument
  readonly lineAt: (path: ReadonlyArray<PropertyKey>) => number
}

const decodeDocument = Schema.decodeUnknownResult(RoutesDocument, { onExcessProperty: "error" })
const standardIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * `ROUTES_FILE`'s text (YAML, or JSON, which YAML reads too) as routes, or what is wrong with it
 * and the line it is on: a syntax error, a field of the wrong kind, an unknown field, a model routed twice.
 */
export const parseRoutesFile = (text: string): Result.Result<ParsedRoutes, string> => {
  const lines = new LineCounter()
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true })
  const lineOf = (offset: number) => lines.linePos(offset).line
  const [syntax] = document.errors
  if (syntax !== undefined) return Result.fail(`line ${lineOf(syntax.pos[0])}: ${syntax.message.split("\n")[0]}`)

  /** The line of the deepest node the path reaches. */
  const lineAt = (path: ReadonlyArray<PropertyKey>) => {
    for (let depth = path.length; depth >= 0; depth--) {
      const node = depth === 0 ? document.contents : document.getIn(path.slice(0, depth), true)
      if (isNode(node) && node.range !== undefined && node.range !== null) return lineOf(node.range[0])
    }
    return 1
  }
  const decoded = decodeDocument(document.toJS())
  if (Result.isFailure(decoded)) {
    const [issue] = standardIssues(decoded.failure.issue).issues
    const path = (issue?.path ?? []).map((key) => (typeof key === "object" && key !== null ? key.key : key))
    const where = path.length === 0 ? "" : ` (${path.join(".")})`
    const message = issue?.message.includes("excess property")
      ? `unknown field "${String(path.at(-1))}"`
      : (issue?.message ?? "not a routes file")
    return Result.fail(`line ${lineAt(path)}${where}: ${message}`)
  }
  for (const [index, route] of decoded.success.routes.entries())
    for (const [position, target] of route.targets.entries())
      if (target.apiKeyEnv !== undefined && target.keyId !== undefined)
        return Result.fail(
          `line ${lineAt(["routes", index, "targets", position, "keyId"])}: a target's key is apiKeyEnv or keyId, not both`
        )
  const seen = new Set<string>()
  for (const [index, route] of decoded.success.routes.entries()) {
    if (seen.has(route.model))
      return Result.fail(`line ${lineAt(["routes", index, "model"])}: the model "${route.model}" is routed twice`)
    seen.add(route.model)
  }
  return Result.succeed({ document: decoded.success, lineAt })
}
