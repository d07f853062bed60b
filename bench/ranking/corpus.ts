/**
 * The labelled questions the ranking is fitted and judged on, read the way the gateway reads
 * memories: each profile as a `MemoryIndex` (terms of content and cues, the local model's
 * quantised vectors), each question with its query vector and the rows that answer it.
 *   recall   bench/recall/data: three people, their memories as imported and with cues, questions
 *            split into `tune` and `heldout`; superseded memories left out as the gateway does.
 *   locomo   ../shared/datasets/locomo: conversations 26, 30, 41, 42, 43 `tune`, the rest `heldout`.
 */
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import type { MemoryType } from "../../src/domain/Memory.ts"
import { memoryText } from "../../src/domain/memoryText.ts"
import { quantize } from "../../src/embedding/vectors.ts"
import { buildMemoryIndex, type CandidateMemory, type MemoryIndex } from "../../src/retrieval/MemoryIndex.ts"
import { termsOf } from "../../src/retrieval/terms.ts"
import { root } from "../processes.ts"
import { loadDataset } from "../recall/dataset.ts"
import { LOCOMO_CATEGORIES, loadLocomo, locomoAvailable } from "../recall/locomo.ts"
import { embedTexts } from "./vectorCache.ts"

const DAY = 86_400_000
/** The recall set's "now" (its dates are relative): fixed, so a fit is reproducible. */
const RECALL_NOW = Date.UTC(2026, 10, 1, 12)
export const MODEL = "local"

export type Dataset = "recall" | "locomo"

/** Sizes of the smaller haystacks made from each recall profile, and how many questions each serves. */
const SUBSET_SIZES = [30, 100] as const
const QUESTIONS_PER_SUBSET = 1

const chunksOf = <T>(items: ReadonlyArray<T>, size: number): ReadonlyArray<ReadonlyArray<T>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/** A seeded choice of `size` memories that keeps every answer and stale value of the questions. */
const subsetOf = <Spec extends { readonly key: string }>(
  specs: ReadonlyArray<Spec>,
  size: number,
  questions: ReadonlyArray<{
    readonly answers: ReadonlyArray<string>
    readonly stale?: ReadonlyArray<string> | undefined
  }>,
  seedText: string
): ReadonlyArray<Spec> => {
  const keep = new Set(questions.flatMap((q) => [...q.answers, ...(q.stale ?? [])]))
  let seed = [...seedText].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 2147483647, 7) || 7
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const others = specs
    .filter((spec) => !keep.has(spec.key))
    .map((spec) => ({ spec, r: random() }))
    .sort((a, b) => a.r - b.r)
  const picked = new Set(others.slice(0, Math.max(0, size - keep.size)).map((o) => o.spec))
  return specs.filter((spec) => keep.has(spec.key) || picked.has(spec))
}

export interface EvalProfile {
  readonly name: string
  readonly index: MemoryIndex
  /** Row → the dataset's key of the memory. */
  readonly keys: ReadonlyArray<string>
  readonly now: number
}

export interface EvalCase {
  readonly id: string
  /** A smaller haystack made from a full profile (fitting only: it teaches how the profile's size matters). */
  readonly subset: boolean
  readonly dataset: Dataset
  readonly split: "tune" | "heldout"
  readonly category: string
  readonly profile: EvalProfile
  readonly question: string
  readonly vector: Float32Array
  /** Rows that answer the question (empty: nothing does). */
  readonly answers: ReadonlySet<number>
  /** Rows holding an older value of the answer (changed facts). */
  readonly stale: ReadonlySet<number>
}

interface MemorySpec {
  readonly key: string
  readonly content: string
  readonly cues: ReadonlyArray<string>
  readonly type: MemoryType
  readonly importance: number
  readonly createdAt: number
  readonly occurredAt: number | null
}

const profileOf = (
  name: string,
  specs: ReadonlyArray<MemorySpec>,
  vectors: ReadonlyMap<string, Float32Array>,
  now: number
): EvalProfile => {
  const rows = specs.map((spec, i) => {
    const text = memoryText(spec.content, spec.cues)
    const memory: CandidateMemory = {
      id: `${name}/${i}`,
      content: spec.content,
      type: spec.type,
      importance: spec.importance,
      decayBase: 1,
      createdAt: spec.createdAt,
      lastAccessedAt: null,
      reinforcedAt: null,
      occurredAt: spec.occurredAt,
      cues: spec.cues
    }
    return { memory, terms: termsOf(text), vector: quantize(vectors.get(text)!) }
  })
  return { name, index: buildMemoryIndex(rows, MODEL), keys: specs.map((spec) => spec.key), now }
}

export const loadCorpus = async (
  log: (line: string) => void,
  options: { readonly locomo?: ReadonlyArray<string> } = {}
) => {
  const recall = await loadDataset()
  const cueFile: Record<string, ReadonlyArray<string>> = JSON.parse(
    await readFile(join(root, "bench/recall/cues/cues.json"), "utf8")
  )
  const conversations = locomoAvailable() ? await loadLocomo(options.locomo) : []
  if (!locomoAvailable()) log("  LoCoMo not found at ../shared/datasets/locomo: the recall set only")

  const recallSpecs = recall.flatMap((profile) =>
    (["raw", "cues"] as const).map((condition) => {
      const superseded = new Set(profile.memories.flatMap((memory) => memory.supersedes ?? []))
      const all = profile.memories.map(
        (memory): MemorySpec => ({
          key: memory.key,
          content: memory.content,
          cues: condition === "cues" ? (cueFile[`${profile.profile}/${memory.key}`] ?? []) : [],
          type: memory.type,
          importance: memory.importance,
          createdAt: RECALL_NOW - memory.createdDaysAgo * DAY,
          occurredAt:
            memory.occurredAt !== undefined
              ? Date.parse(memory.occurredAt)
              : memory.occurredDaysAgo !== undefined
                ? RECALL_NOW - memory.occurredDaysAgo * DAY
                : null
        })
      )
      // As the gateway holds them: superseded memories are never ranked. `all` is the profile when
      // the changes were not marked.
      return { profile, condition, specs: all.filter((spec) => !superseded.has(spec.key)), all }
    })
  )
  const locomoSpecs = conversations.map((conversation) => ({
    conversation,
    specs: conversation.memories.map(
      (memory): MemorySpec => ({
        key: memory.key,
        content: memory.content,
        cues: [],
        type: "event",
        importance: 0.5,
        createdAt: memory.createdAt,
        occurredAt: memory.occurredAt
      })
    )
  }))

  const texts = [
    ...recallSpecs.flatMap(({ all }) => all.map((spec) => memoryText(spec.content, spec.cues))),
    ...recall.flatMap((profile) => profile.questions.map((q) => q.question)),
    ...locomoSpecs.flatMap(({ specs }) => specs.map((spec) => spec.content)),
    ...conversations.flatMap((conversation) => conversation.questions.map((q) => q.question))
  ]
  const vectors = await embedTexts(texts, log)

  const cases: Array<EvalCase> = []
  for (const { profile, condition, specs: fullSpecs, all } of recallSpecs) {
    // The whole profile, the profile with its changes unmarked (for the changed facts), and smaller
    // haystacks, each for a few questions: their answers among others.
    const haystacks = [
      { name: "all", specs: fullSpecs, questions: profile.questions },
      { name: "unmarked", specs: all, questions: profile.questions.filter((q) => q.category === "changed") },
      ...SUBSET_SIZES.flatMap((size) =>
        chunksOf(profile.questions, QUESTIONS_PER_SUBSET).map((questions, i) => ({
          name: `${size}-${i}`,
          specs: subsetOf(fullSpecs, size, questions, `${profile.profile}-${condition}-${size}-${i}`),
          questions
        }))
      )
    ]
    for (const haystack of haystacks) {
      const evalProfile = profileOf(
        `${profile.profile}-${condition}-${haystack.name}`,
        haystack.specs,
        vectors,
        RECALL_NOW
      )
      const rowOf = new Map(haystack.specs.map((spec, i) => [spec.key, i]))
      for (const q of haystack.questions) {
        cases.push({
          id: `${q.id}-${condition}-${haystack.name}`,
          subset: haystack.name !== "all" && haystack.name !== "unmarked",
          dataset: "recall",
          split: q.split,
          category: `${haystack.name === "unmarked" ? "changed, unmarked" : q.category} (${condition})`,
          profile: evalProfile,
          question: q.question,
          vector: vectors.get(q.question)!,
          answers: new Set(q.answers.flatMap((key) => (rowOf.has(key) ? [rowOf.get(key)!] : []))),
          stale: new Set((q.stale ?? []).flatMap((key) => (rowOf.has(key) ? [rowOf.get(key)!] : [])))
        })
      }
    }
  }
  for (const { conversation, specs: fullSpecs } of locomoSpecs) {
    // Also the conversation after its first sessions, with the questions those answer.
    for (const sessions of [undefined, 3]) {
      const specs =
        sessions === undefined
          ? fullSpecs
          : fullSpecs.filter((spec) => Number(/^D(\d+):/.exec(spec.key)?.[1]) <= sessions)
      const rowOf = new Map(specs.map((spec, i) => [spec.key, i]))
      const now = sessions === undefined ? conversation.now : Math.max(...specs.map((spec) => spec.createdAt)) + 60_000
      const evalProfile = profileOf(`locomo-${conversation.id}-${sessions ?? "all"}`, specs, vectors, now)
      for (const q of conversation.questions) {
        if (!q.evidence.every((key) => rowOf.has(key))) continue
        cases.push({
          id: `${q.id}-${sessions ?? "all"}`,
          subset: sessions !== undefined,
          dataset: "locomo",
          split: conversation.split,
          category: LOCOMO_CATEGORIES[q.category],
          profile: evalProfile,
          question: q.question,
          vector: vectors.get(q.question)!,
          answers: new Set(q.evidence.map((key) => rowOf.get(key)!)),
          stale: new Set()
        })
      }
    }
  }
  return cases
}

/**
 * Rows picked from cases, weighed so that each dataset counts the same in all: how many rows there
 * are, and the weight of one row of a case.
 */
export const balancedByDataset = (
  picked: ReadonlyArray<{ readonly c: EvalCase; readonly rows: ReadonlyArray<number> }>
) => {
  const count = picked.reduce((sum, p) => sum + p.rows.length, 0)
  const rowsBy = new Map<string, number>()
  for (const p of picked) rowsBy.set(p.c.dataset, (rowsBy.get(p.c.dataset) ?? 0) + p.rows.length)
  return { count, weightOf: (c: EvalCase) => count / rowsBy.size / rowsBy.get(c.dataset)! }
}
