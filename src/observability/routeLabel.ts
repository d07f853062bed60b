/**
 * The route template a request path belongs to (`/api/profiles/:id/traits/:key`), for metric
 * labels: ids never become labels, and paths outside every template share `unmatched`, so the
 * number of series stays bounded whatever clients send.
 */
export const routeLabeler = (templates: ReadonlyArray<string>) => {
  const bySegmentCount = new Map<number, Array<ReadonlyArray<string>>>()
  for (const template of new Set(templates)) {
    const segments = template.split("/")
    const group = bySegmentCount.get(segments.length) ?? []
    group.push(segments)
    bySegmentCount.set(segments.length, group)
  }
  const literal = new Set([...templates].filter((template) => !template.includes("/:")))
  return (path: string): string => {
    if (literal.has(path)) return path
    const segments = path.split("/")
    const candidates = bySegmentCount.get(segments.length)
    if (candidates === undefined) return "unmatched"
    for (const template of candidates) {
      if (template.every((segment, i) => segment === segments[i] || (segment.startsWith(":") && segments[i] !== ""))) {
        return template.join("/")
      }
    }
    return "unmatched"
  }
}
