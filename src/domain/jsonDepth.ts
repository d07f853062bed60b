/**
 * Whether a parsed JSON value nests arrays and objects more than `max` levels deep (the outermost
 * value is level 1). JSON.parse accepts every depth, but a value thousands deep overflows the stack
 * of everything that walks it afterwards (JSON.stringify, Schema, the database driver), so it is
 * measured here without recursion, before anything else looks at it.
 */
export const exceedsJsonDepth = (value: unknown, max: number): boolean => {
  if (typeof value !== "object" || value === null) return false
  const pending: Array<object> = [value]
  const depths: Array<number> = [1]
  while (pending.length > 0) {
    const current = pending.pop()!
    const depth = depths.pop()!
    if (depth > max) return true
    for (const inner of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof inner === "object" && inner !== null) {
        pending.push(inner)
        depths.push(depth + 1)
      }
    }
  }
  return false
}
