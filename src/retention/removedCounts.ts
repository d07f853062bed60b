/** What one sweep removed in one namespace. */
export interface Removed {
  readonly memories: number
  readonly turns: number
  readonly responses: number
}

export const REMOVED_KINDS = ["memories", "turns", "responses"] as const satisfies ReadonlyArray<keyof Removed>

/** Expired memories a batch deleted, in one namespace. */
export interface ExpiredIn {
  readonly namespace: string
  readonly deleted: number
}

/** The turns and Responses state one namespace's `turnsDays` removed. */
export interface HistoryRemoved {
  readonly namespace: string
  readonly turns: number
  readonly responses: number
}

/**
 * Each namespace's removals in one sweep: the expired memories (of every namespace, counted batch by
 * batch) and the history its policy removed. A namespace that lost nothing is left out.
 */
export const removedByNamespace = (
  expired: ReadonlyArray<ExpiredIn>,
  history: ReadonlyArray<HistoryRemoved>
): ReadonlyMap<string, Removed> => {
  const removed = new Map<string, Removed>()
  const add = (namespace: string, more: Removed) => {
    const before = removed.get(namespace) ?? { memories: 0, turns: 0, responses: 0 }
    removed.set(namespace, {
      memories: before.memories + more.memories,
      turns: before.turns + more.turns,
      responses: before.responses + more.responses
    })
  }
  for (const { namespace, deleted } of expired) add(namespace, { memories: deleted, turns: 0, responses: 0 })
  for (const { namespace, turns, responses } of history) add(namespace, { memories: 0, turns, responses })
  for (const [namespace, counts] of removed)
    if (counts.memories + counts.turns + counts.responses === 0) removed.delete(namespace)
  return removed
}

/** Everything a sweep removed, of every kind. */
export const totalOf = (removed: ReadonlyMap<string, Removed>): Removed => {
  let memories = 0
  let turns = 0
  let responses = 0
  for (const counts of removed.values()) {
    memories += counts.memories
    turns += counts.turns
    responses += counts.responses
  }
  return { memories, turns, responses }
}
