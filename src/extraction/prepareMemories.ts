import { Effect } from "effect"
import { instantOf } from "../domain/Memory.ts"
import { decayFactorOf, type MemoryHalfLives } from "../domain/memoryDecay.ts"
import { memoryText } from "../domain/memoryText.ts"
import type { Embedder } from "../embedding/Embedder.ts"
import { cosineRows, normalize, type QuantizedVector } from "../embedding/vectors.ts"
import { singleQuery } from "../retrieval/conversationQuery.ts"
import type { MemoryIndex } from "../retrieval/MemoryIndex.ts"
import type { Retrieval } from "../retrieval/Retrieval.ts"
import { termsOf } from "../retrieval/terms.ts"
import type { MemoryCandidate } from "./decodeReply.ts"
import type { ExtractedMemory } from "./ExtractionRepo.ts"
import type { KnownMemory } from "./prompts.ts"

/** Known memories shown to the model: the closest to the new input, then the most important. */
const CLOSEST_KNOWN = 15
const IMPORTANT_KNOWN = 10

/** Vectors at least this close say the same thing (when they also name the same things). */
export const DUPLICATE_COSINE = 0.88

export interface KnownMemories {
  readonly known: ReadonlyArray<KnownMemory>
  /** ref → memory id */
  readonly ids: ReadonlyMap<string, string>
}

/**
 * The profile's memories the extraction model sees, each under a short ref (`m1`, …) it can name
 * in `supersedes`: those ranked closest to the new input (the injection ranking, without the
 * relevance floor), then the most important others.
 */
export const knownMemoriesFor = Effect.fnUntraced(function* (
  retrieval: Retrieval["Service"],
  index: MemoryIndex,
  text: string,
  now: number,
  halfLives: MemoryHalfLives
) {
  const closest =
    text.trim() === ""
      ? []
      : (yield* retrieval.search(index, singleQuery(text), now, {
          limit: CLOSEST_KNOWN,
          type: undefined
        })).memories.map((s) => s.memory)
  const chosen = new Set(closest.map((memory) => memory.id))
  const important = [...index.memories]
    .filter((memory) => !chosen.has(memory.id))
    .sort((a, b) => b.importance * decayFactorOf(b, halfLives, now) - a.importance * decayFactorOf(a, halfLives, now))
    .slice(0, IMPORTANT_KNOWN)
  const ids = new Map<string, string>()
  const known = [...closest, ...important].map((memory, i): KnownMemory => {
    const ref = `m${i + 1}`
    ids.set(ref, memory.id)
    return {
      ref,
      content: memory.content,
      occurredOn: memory.occurredAt === null ? undefined : new Date(memory.occurredAt).toISOString().slice(0, 10)
    }
  })
  return { known, ids } satisfies KnownMemories
})

/** Proper names and numbers of a text: two memories that differ in them are different facts. */
const namesOf = (text: string) =>
  new Set(
    text
      .split(/[^\p{L}\p{N}]+/u)
      .filter((word, i) => word !== "" && (/\p{N}/u.test(word) || (i > 0 && /^\p{Lu}/u.test(word) && word !== "User")))
      .map((word) => word.toLowerCase())
  )

const sameNames = (a: string, b: string) => {
  const x = namesOf(a)
  const y = namesOf(b)
  return x.size === y.size && [...x].every((name) => y.has(name))
}

/** Shares enough words (stems) to be a rewording rather than a neighbour. */
const overlapping = (a: string, b: string) => {
  const x = termsOf(a).counts
  const y = termsOf(b).counts
  let shared = 0
  for (const term of x.keys()) if (y.has(term)) shared++
  const union = x.size + y.size - shared
  return union > 0 && shared / union >= 0.3
}

/** The same text up to case, spacing and punctuation. */
export const normalizedText = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim()

/** pg_trgm's trigrams of a text: of each word, lower-cased, padded with two spaces before and one after. */
const trigramsOf = (text: string) => {
  const trigrams = new Set<string>()
  for (const word of normalizedText(text).split(" ")) {
    if (word === "") continue
    const padded = `  ${word} `
    for (let i = 0; i + 3 <= padded.length; i++) trigrams.add(padded.slice(i, i + 3))
  }
  return trigrams
}

/** pg_trgm's `similarity`: shared trigrams over all trigrams of the two texts. */
export const trigramSimilarity = (a: string, b: string) => {
  const x = trigramsOf(a)
  const y = trigramsOf(b)
  let shared = 0
  for (const trigram of x) if (y.has(trigram)) shared++
  const union = x.size + y.size - shared
  return union === 0 ? 0 : shared / union
}

export const prepareMemories = Effect.fnUntraced(function* (
  embedder: Embedder["Service"],
  index: MemoryIndex,
  candidates: ReadonlyArray<MemoryCandidate>,
  refs: ReadonlyMap<string, string>,
  dedupeSimilarity: number,
  dropped: Array<string>
) {
  const vectors: ReadonlyArray<QuantizedVector> | undefined =
    embedder.model === undefined || candidates.length === 0
      ? undefined
      : yield* embedder
          .documents(candidates.map((candidate) => memoryText(candidate.content, candidate.cues ?? [])))
          .pipe(
            Effect.catchTag("EmbeddingFailed", (error) =>
              Effect.as(
                Effect.logWarning(`extracted memories not embedded now (queued instead): ${error.message}`),
                undefined
              )
            )
          )
  const matrix = index.vectors !== undefined && index.vectors.model === embedder.model ? index.vectors : undefined
  const cosines = matrix === undefined ? undefined : new Float32Array(matrix.rows)

  return candidates.map((candidate, i): ExtractedMemory => {
    let occurredAt: number | undefined
    if (candidate.occurred_at !== undefined && candidate.occurred_at !== null) {
      const at = instantOf(candidate.occurred_at)
      if (Number.isFinite(at)) occurredAt = at
      else
        dropped.push(
          `memories: occurred_at '${candidate.occurred_at.slice(0, 40)}' is not a date (the memory is kept without it)`
        )
    }
    const supersedes = (candidate.supersedes ?? []).flatMap((ref) => {
      const id = refs.get(ref)
      if (id === undefined) dropped.push(`memories: supersedes names unknown ref '${ref.slice(0, 20)}'`)
      return id === undefined ? [] : [id]
    })
    const vector = vectors?.[i]
    const query =
      vector !== undefined && matrix !== undefined && cosines !== undefined && vector.bytes.length === matrix.dimensions
        ? normalize(Array.from(vector.bytes))
        : undefined
    if (query !== undefined) cosineRows(matrix!, query, 0, matrix!.rows, cosines!)
    const normalized = normalizedText(candidate.content)
    let duplicateOf: string | undefined
    let best = 0
    index.memories.forEach((memory, row) => {
      if (supersedes.includes(memory.id)) return
      if (normalizedText(memory.content) === normalized) {
        duplicateOf = memory.id
        best = Number.POSITIVE_INFINITY
        return
      }
      if (!sameNames(memory.content, candidate.content)) return
      const spelled = trigramSimilarity(memory.content, candidate.content)
      const meant = query === undefined ? 0 : cosines![row]!
      const closeness =
        spelled >= dedupeSimilarity
          ? 1 + spelled
          : meant >= DUPLICATE_COSINE && overlapping(memory.content, candidate.content)
            ? meant
            : 0
      if (closeness > best) {
        best = closeness
        duplicateOf = memory.id
      }
    })
    return {
      content: candidate.content,
      cues: candidate.cues ?? [],
      type: candidate.type,
      importance: candidate.importance,
      occurredAt,
      supersedes,
      duplicateOf,
      vector:
        vector === undefined || embedder.model === undefined ? undefined : { model: embedder.model, value: vector },
      source: candidate.source ?? "text",
      category: candidate.category ?? null
    }
  })
})
