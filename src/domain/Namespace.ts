import { Context, Effect, Layer } from "effect"

/**
 * Namespaces: one per app sharing the gateway. Every profile belongs to exactly one, and a user id
 * is unique within its namespace, not across them. A request's namespace comes from its key (the
 * environment's keys act in `default`), never from its body.
 */
export const DEFAULT_NAMESPACE = "default"

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/

/** Lowercase letters, digits, `-` and `_`, 1–63 characters, starting with a letter or digit. */
export const isNamespaceName = (name: string) => NAME.test(name)

/** The header with which the global admin names the namespace it acts in (unnamed: all of them). */
export const NAMESPACE_HEADER = "x-service-namespace"

/**
 * The namespaces a request may touch: one (every key but the global admin's, and the global admin
 * naming one), or all (the global admin naming none: lists span namespaces, a user id is looked up
 * in `default`).
 */
export type NamespaceScope = { readonly _tag: "One"; readonly name: string } | { readonly _tag: "All" }

export const oneNamespace = (name: string): NamespaceScope => ({ _tag: "One", name })
export const allNamespaces: NamespaceScope = { _tag: "All" }

/**
 * The current request's scope, set by the server middleware once its key is checked. Nothing is
 * set outside a request: the profile store refuses to run then (see `currentNamespace`), so work
 * that forgot its scope fails instead of reaching another app's users.
 */
export const CurrentNamespace = Context.Reference<NamespaceScope | undefined>("gateway/namespaces/CurrentNamespace", {
  defaultValue: () => undefined
})

/** The scope in effect; a defect outside of one. */
export const currentNamespace: Effect.Effect<NamespaceScope> = Effect.flatMap(CurrentNamespace, (scope) =>
  scope === undefined
    ? Effect.die(new Error("profile data reached without a namespace scope (CurrentNamespace is not set)"))
    : Effect.succeed(scope)
)

/** The namespace a user id is looked up or created in: the scope's, or `default` for the global admin naming none. */
export const addressedNamespace = (scope: NamespaceScope) => (scope._tag === "One" ? scope.name : DEFAULT_NAMESPACE)

/**
 * A user as a key of the caches and limits kept by user (a user id is unique within its namespace
 * only). Namespace names hold no `:`, so the first one ends the namespace.
 */
export const namespacedUser = (namespace: string, userId: string) => `${namespace}:${userId}`

/** Runs in one namespace: for an embedding application's own calls, and for tests. */
export const inNamespace = (name: string) => Layer.succeed(CurrentNamespace, oneNamespace(name))

/** Why a caller may not create something in the namespace it named. */
export interface NamespaceRefusal {
  readonly status: 400 | 403
  readonly code: string
  readonly message: string
}

/**
 * The namespace a caller creates a key or webhook in: the one it names, if its scope allows it, else
 * its own (the global admin naming none: `default`).
 */
export const namespaceToCreateIn = (
  requested: string | undefined,
  caller: NamespaceScope
): { readonly name: string } | { readonly refused: NamespaceRefusal } => {
  const name = requested ?? addressedNamespace(caller)
  if (!isNamespaceName(name))
    return {
      refused: {
        status: 400,
        code: "invalid_namespace",
        message: "namespace must be 1–63 lowercase letters, digits, '-' or '_'"
      }
    }
  if (caller._tag === "One" && caller.name !== name)
    return {
      refused: {
        status: 403,
        code: "namespace_not_allowed",
        message: `This key manages namespace '${caller.name}' only`
      }
    }
  return { name }
}
