/** A word diff of two texts (longest common subsequence), for summary versions. */
export type Piece = { readonly kind: "same" | "added" | "removed"; readonly text: string }

export const wordDiff = (before: string, after: string): ReadonlyArray<Piece> => {
  const a = before.split(/(\s+)/)
  const b = after.split(/(\s+)/)
  // Lengths of the common subsequences of the suffixes: summaries are short, so a table is fine.
  const table = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1))
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i]![j] = a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!)
    }
  }
  const pieces: Array<Piece> = []
  const push = (kind: Piece["kind"], text: string) => {
    const last = pieces.at(-1)
    if (last !== undefined && last.kind === kind) pieces[pieces.length - 1] = { kind, text: last.text + text }
    else pieces.push({ kind, text })
  }
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push("same", a[i]!)
      i++
      j++
    } else if (table[i + 1]![j]! >= table[i]![j + 1]!) {
      push("removed", a[i++]!)
    } else {
      push("added", b[j++]!)
    }
  }
  while (i < a.length) push("removed", a[i++]!)
  while (j < b.length) push("added", b[j++]!)
  return pieces
}
