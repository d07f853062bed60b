/** What ordering needs of a target: its rank and its share of the load among targets of the same rank. */
export interface Ranked {
  readonly order: number
  readonly weight: number
}

/**
 * The order in which one request tries a route's targets: lower `order` first; among targets of
 * equal order, a weighted draw without replacement (a target of weight 3 comes first three times as
 * often as one of weight 1, and the others follow as its fallbacks). `random` gives numbers in [0, 1).
 */
export const targetOrder = <T extends Ranked>(targets: ReadonlyArray<T>, random: () => number): ReadonlyArray<T> => {
  if (targets.length === 1) return targets
  const groups = new Map<number, Array<T>>()
  for (const target of targets) {
    const group = groups.get(target.order)
    if (group === undefined) groups.set(target.order, [target])
    else group.push(target)
  }
  const ordered: Array<T> = []
  for (const order of [...groups.keys()].sort((a, b) => a - b)) {
    const left = [...groups.get(order)!]
    while (left.length > 1) {
      let point = random() * left.reduce((sum, target) => sum + target.weight, 0)
      let index = 0
      while (index < left.length - 1 && point >= left[index]!.weight) point -= left[index++]!.weight
      ordered.push(...left.splice(index, 1))
    }
    ordered.push(...left)
  }
  return ordered
}
