import { Clock, Effect, Option, Result } from "effect"
import { ProfileNotFound } from "../domain/errors.ts"
import { contextBlock, renderedReceiptJson } from "../injection/contextBlock.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { Profiles } from "./Profiles.ts"

/**
 * What a message from the profile's user would get injected: the block and its receipt, from the same
 * profile cache, ranking and plugins as a request (the injection stage's own `contextBlock`), with no
 * memory noted as used; or, when a plugin would refuse the request or fail, the refusal the client would
 * get. `POST /api/profiles/{id}/preview` answers it; the console shows it.
 */
export const previewInjection = Effect.fn("Profiles.preview")(function* (ref: string, message: string) {
  const profile = yield* (yield* Profiles).find(ref)
  const snapshot = yield* (yield* SnapshotCache)
    .snapshot(profile)
    .pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(new ProfileNotFound({ ref })), onSome: Effect.succeed }))
    )
  const now = yield* Clock.currentTimeMillis
  const block = yield* contextBlock(
    [{ role: "user", content: message }],
    snapshot,
    (yield* TraitSchema).definitions,
    now
  ).pipe(Effect.result)
  if (Result.isFailure(block)) {
    const { code, message, status } = block.failure.clientError
    return { context: null, receipt: null, refusal: { status, code, message } }
  }
  const { context, receipt } = block.success
  return { context: context ?? null, receipt: renderedReceiptJson(profile.id, receipt), refusal: null }
})
