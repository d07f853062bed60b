import type { MemoryIndex } from "./MemoryIndex.ts"
import type { KeywordPart } from "./queryKeywords.ts"

/**
 * How a query's names reach the memories: those that name what the question names, and — one hop
 * further — those that name what the question's best matches name ("What did Melanie's daughter
 * draw?": the memories about Melanie's daughter name her, "Sarah"; the memories naming Sarah carry
 * the drawing).
 */
export interface QueryLinks {
  /** The names of the profile the query names, with their keyword weights (rarer names weigh more). */
  readonly names: ReadonlyMap<string, number>
  /** Row → the weighted share of the query's names the memory names, in [0, 1] (only rows naming one). */
  readonly nameShares: ReadonlyMap<number, number>
  /**
   * Row → the keyword share of the best of the query's first matches that names a name this memory
   * names and the query does not (only rows reached so).
   */
  readonly hops: ReadonlyMap<number, number>
}

/** The query's best keyword matches whose names are followed. */
const HOP_FROM = 5
/** Names a match may pass on (its rarest first). */
const NAMES_PER_MATCH = 4
/** A name in more than this share of the profile's memories (the user, a speaker) links nothing. */
const COMMON_NAME_SHARE = 0.1
/** …unless the profile is this small. */
const COMMON_NAME_MINIMUM = 3

const NO_LINKS: QueryLinks = { names: new Map(), nameShares: new Map(), hops: new Map() }

/** By keyword part: a message ranked by keywords and then with its vector reads the same part, and the same links. */
const known = new WeakMap<KeywordPart, QueryLinks>()

export const queryLinksOf = (index: MemoryIndex, part: KeywordPart): QueryLinks => {
  let links = known.get(part)
  if (links === undefined) {
    links = findLinks(index, part)
    known.set(part, links)
  }
  return links
}

const findLinks = (index: MemoryIndex, part: KeywordPart): QueryLinks => {
  if (index.names.size === 0 || part.matched.length === 0) return NO_LINKS
  const names = new Map<string, number>()
  let total = 0
  for (const [term, weight] of part.keywords.weights) {
    if (!index.names.has(term)) continue
    names.set(term, weight)
    total += weight
  }
  const nameShares = new Map<number, number>()
  for (const [name, weight] of names)
    for (const row of index.keywords.postings.get(name)!)
      nameShares.set(row, (nameShares.get(row) ?? 0) + weight / total)

  const postings = index.keywords.postings
  const common = Math.max(COMMON_NAME_MINIMUM, COMMON_NAME_SHARE * index.memories.length)
  const hops = new Map<number, number>()
  for (const from of part.matched.slice(0, HOP_FROM)) {
    const share = part.keywordScores[from]! / part.bestKeyword
    const passed = [...index.keywords.terms[from]!.counts.keys()]
      .filter((term) => index.names.has(term) && !names.has(term) && postings.get(term)!.length <= common)
      .sort((a, b) => postings.get(a)!.length - postings.get(b)!.length)
      .slice(0, NAMES_PER_MATCH)
    for (const name of passed)
      for (const row of postings.get(name)!) if (row !== from && (hops.get(row) ?? 0) < share) hops.set(row, share)
  }
  return { names, nameShares, hops }
}
