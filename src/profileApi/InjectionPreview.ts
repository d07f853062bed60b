import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import { ProfileNotFound } from "../domain/errors.ts"
import { ContextBlock } from "../injection/ContextBlock.ts"
import { type RenderedReceipt, renderedReceiptJson } from "../injection/receipt.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { NamespaceTraitSchemas } from "../traits/NamespaceTraitSchemas.ts"

/** A preview: the block (null: nothing to say) and its receipt, or the refusal a request would get instead. */
export interface PreviewedInjection {
  readonly context: string | null
  readonly receipt: RenderedReceipt | null
  readonly refusal: { readonly status: number; readonly code: string; readonly message: string } | null
}

/**
 * What a message from the profile's user would get injected: the block and its receipt, from the same
 * profile cache, ranking and plugins as a request (the injection stage's own `ContextBlock`), the
 * namespace's relevant shared knowledge included, with no memory noted as used; or, when a plugin would
 * refuse the request or fail, the refusal the client would get. `POST /api/profiles/{id}/preview`
 * answers it; the console shows it.
 */
export class InjectionPreview extends Context.Service<
  InjectionPreview,
  {
    readonly preview: (ref: string, message: string) => Effect.Effect<PreviewedInjection, ProfileNotFound>
  }
>()("gateway/profiles/InjectionPreview") {
  static readonly layer = Layer.effect(
    InjectionPreview,
    Effect.gen(function* () {
      const profiles = yield* Profiles
      const cache = yield* SnapshotCache
      const traitSchemas = yield* NamespaceTraitSchemas
      const block = yield* ContextBlock

      const preview = Effect.fn("Profiles.preview")(function* (ref: string, message: string) {
        const profile = yield* profiles.find(ref)
        const snapshot = yield* cache
          .snapshot(profile)
          .pipe(
            Effect.flatMap(
              Option.match({ onNone: () => Effect.fail(new ProfileNotFound({ ref })), onSome: Effect.succeed })
            )
          )
        const shared = yield* cache.sharedSnapshot(profile.namespace)
        const now = yield* Clock.currentTimeMillis
        const rendered = yield* block
          .render(
            [{ role: "user", content: message }],
            snapshot,
            traitSchemas.definitions(profile.namespace),
            now,
            undefined,
            undefined,
            Option.getOrUndefined(shared)
          )
          .pipe(Effect.result)
        if (Result.isFailure(rendered)) {
          const { code, message, status } = rendered.failure.clientError
          return { context: null, receipt: null, refusal: { status, code, message } }
        }
        const { context, receipt } = rendered.success
        return { context: context ?? null, receipt: renderedReceiptJson(profile.id, receipt), refusal: null }
      })

      return InjectionPreview.of({ preview })
    })
  ).pipe(Layer.provide([SnapshotCache.layer, Profiles.layer, NamespaceTraitSchemas.layer, ContextBlock.layer]))
}
