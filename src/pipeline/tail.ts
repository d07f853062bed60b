import { Effect } from "effect"
import type { Outbound } from "../apis/ApiAdapter.ts"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import type { InjectionPlacement } from "../domain/InjectionPlacement.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { ContextBlocksRepo } from "../injection/ContextBlocksRepo.ts"
import { layoutOf, type TailLayout } from "../injection/conversationTail.ts"
import type { InjectionReceipt } from "../injection/receipt.ts"
import { requestStage } from "../observability/requestSpan.ts"
import type { ProfileSnapshot } from "../snapshots/SnapshotsRepo.ts"
import type { TurnTail } from "../turns/TurnsRepo.ts"

/** Where a request's context goes at its tail, and the earlier turns' tails it carries again. */
export interface TailPlan {
  /** The conversation's items, as the outbound body holds them. */
  readonly items: ReadonlyArray<unknown>
  readonly layout: TailLayout
  /** The text each earlier turn's tail had, by its position. */
  readonly kept: ReadonlyMap<number, string>
  /** Every line of those texts: the new block does not repeat them. */
  readonly shown: ReadonlySet<string>
  /** The hashes of the positions whose tails went back, oldest first (the next turn's shortcut). */
  readonly chain: ReadonlyArray<string>
  /** The profile's `forgetting` count the plan (and the block rendered with it) was made under. */
  readonly forgetting: number
}

const NOTHING_SHOWN: ReadonlySet<string> = new Set()

/**
 * What the gateway adds for this turn: the block, and a thread's older turns relevant to the message
 * (they change every turn too, so they go with it).
 */
export const turnContext = (block: string | undefined, threadNote: string | undefined) =>
  block === undefined ? threadNote : threadNote === undefined ? block : `${block}\n\n${threadNote}`

/** The receipt, saying where the block went and how many earlier blocks went back. */
export const placedReceipt = (
  receipt: InjectionReceipt | "unavailable",
  placement: InjectionPlacement,
  plan: TailPlan | undefined
): InjectionReceipt | "unavailable" =>
  receipt === "unavailable" || receipt.skipped
    ? receipt
    : {
        ...receipt,
        placement,
        keptBlocks: [...(plan?.kept.values() ?? [])].filter((text) => text !== "").length
      }

/**
 * Stage 3a (`INJECTION_PLACEMENT=latest`): `find` — the earlier turns' tails of this conversation,
 * found by the hashes of the items before them (`ContextBlocksRepo`), so they go back where they were
 * and the provider's cache serves them with the rest of the prefix; within the database deadline
 * (without the database none go back: the prefix is cached up to the first of them). `keep` — this
 * turn's tail, remembered at once on this replica and written with the turn for the others.
 */
export const makeTail = Effect.gen(function* () {
  const store = yield* ContextBlocksRepo
  const health = yield* DatabaseHealth

  /** The earlier tails of a conversation that has some, within the database deadline. */
  const lookup = Effect.fnUntraced(function* (
    items: ReadonlyArray<unknown>,
    layout: TailLayout,
    snapshot: ProfileSnapshot
  ) {
    const hashes = layout.earlier.map((position) => layout.hashes[position]!)
    const found = yield* health
      .guard(store.find(snapshot.profile.id, hashes, snapshot.forgetting))
      .pipe(Effect.catchTag("DatabaseUnavailable", () => Effect.succeed(new Map())))
    const kept = new Map<number, string>()
    const chain: Array<string> = []
    for (const position of layout.earlier) {
      const hash = layout.hashes[position]!
      const tail = found.get(hash)
      if (tail === undefined) continue
      kept.set(position, tail.text)
      chain.push(hash)
    }
    const shown = new Set([...kept.values()].flatMap((text) => text.split("\n")))
    return { items, layout, kept, shown, chain, forgetting: snapshot.forgetting } satisfies TailPlan
  }, requestStage("pipeline.tail"))

  const find = (outbound: Outbound, snapshot: ProfileSnapshot): Effect.Effect<TailPlan> => {
    const { conversation } = outbound
    const items = conversation.items(outbound.body)
    const layout = layoutOf(items, conversation.isAnswer)
    // A conversation's first request has no earlier tails to look for: no stage, nothing asked.
    return layout.earlier.length === 0
      ? Effect.succeed({
          items,
          layout,
          kept: new Map(),
          shown: NOTHING_SHOWN,
          chain: [],
          forgetting: snapshot.forgetting
        })
      : lookup(items, layout, snapshot)
  }

  /**
   * This turn's tail (`""`: nothing new went), remembered on this replica at once; the record writes it
   * with the turn's answer for the others.
   */
  const keep = (profileId: ProfileId, plan: TailPlan, text: string | undefined): TurnTail => {
    const tail = {
      prefixHash: plan.layout.hashes[plan.layout.point]!,
      text: text ?? "",
      chain: plan.chain,
      forgetting: plan.forgetting
    }
    store.remember(profileId, tail.prefixHash, {
      text: tail.text,
      chain: tail.chain,
      createdAt: Date.now(),
      forgetting: tail.forgetting
    })
    return tail
  }

  return { find, keep }
})
