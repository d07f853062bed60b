import { Effect, Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { currentNamespace, namespaceToCreateIn } from "../domain/Namespace.ts"

/** A namespace the caller may not act on: a name that is not one (400), or another namespace than its own (403). */
export class NamespaceRefused
  extends Schema.TaggedError<NamespaceRefused>()("NamespaceRefused", {
    status: Schema.Literals([400, 403]),
    code: Schema.String,
    message: Schema.String
  })
  implements ClientFacing<400 | 403>
{
  get clientError() {
    return clientError(this.status, this.code, this.message)
  }
}

/**
 * The namespace a path names, if the request's key may manage it: the global admin any (naming one
 * with `X-Service-Namespace`: that one), a namespace's admin key its own. Another namespace is refused
 * before the name is read, so every spelling of it gets the same 403.
 */
export const namespaceToManage = (name: string): Effect.Effect<string, NamespaceRefused> =>
  Effect.flatMap(currentNamespace, (caller) => {
    if (caller._tag === "One" && caller.name !== name)
      return Effect.fail(
        new NamespaceRefused({
          status: 403,
          code: "namespace_not_allowed",
          message: `This key manages namespace '${caller.name}' only`
        })
      )
    const target = namespaceToCreateIn(name, caller)
    return "refused" in target ? Effect.fail(new NamespaceRefused(target.refused)) : Effect.succeed(target.name)
  })
