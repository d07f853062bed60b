/**
 * The retrieval benchmark: does the right memory reach the prompt? Three gateways on one database,
 * differing only in how they rank:
 *   off    EMBEDDINGS=off: the fitted model without vectors (keywords, time, neighbours, …)
 *   local  the local model's cosine similarity alone (MEMORY_RANKING=cosine: the reference point for semantic search)
 *   fused  the default: the fitted model with the local model's vectors, with the relevance floor
 * Each profile is imported twice: its memories as they are, and with cues (bench/recall/cues: the
 * situations in which each memory matters, written by an LLM from each memory alone, as the
 * extraction model writes them for the memories it extracts).
 * Each question of the labelled set in bench/recall/data is asked through
 * `POST /api/profiles/{id}/memories/search`, which ranks exactly as injection does; so is each
 * question of LoCoMo (bench/recall/locomo.ts; read from ../shared/datasets/locomo, skipped when
 * absent), as of the end of its conversation. Then the cost on the request path:
 * /v1/chat/completions against a mock provider, one at a time and at 64 connections, for `off` and
 * `fused`.
 *
 *   npm run bench:recall            # everything, writes bench/results/recall.{json,md}
 *   npm run bench:recall -- --smoke # one profile, two LoCoMo conversations, no 10,000-memory profile, short cells (checks the benchmark works)
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { EmbeddedPostgres } from "../src/db/EmbeddedPostgres.ts"
import { lineTokens } from "../src/retrieval/injectionCut.ts"
import {
  CONVERSATION_PROFILE_SIZE,
  CONVERSATION_USER,
  newMessageBody,
  seedConversationProfile,
  waitForJobs
} from "./conversationProfile.ts"
import { load, median, percentile } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, cpuMs, freePort, gatewayEnvironment, hasTaskset, root, startProcess, stop } from "./processes.ts"
import { type Category, type DatasetMemory, type DatasetProfile, loadDataset, type Question } from "./recall/dataset.ts"
import { fillerMemories } from "./recall/filler.ts"
import {
  LOCOMO_CATEGORIES,
  LOCOMO_HELDOUT,
  LOCOMO_TUNE,
  type LocomoConversation,
  loadLocomo,
  locomoAvailable
} from "./recall/locomo.ts"

const smoke = process.argv.includes("--smoke")
const DAY = 86_400_000
const BIG_PROFILE_SIZE = 10_000
/** What injection would take: the first 10 results (INJECTION_MAX_MEMORIES). */
const INJECTED = 10

const log = (line: string) => process.stdout.write(`${line}\n`)

// ---- the gateways ---------------------------------------------------------------------------

const scope = Effect.runSync(Scope.make())
const dataDir = await mkdtemp(join(tmpdir(), "gateway-recall-"))
await chmod(dataDir, 0o755)
const pgContext = await Effect.runPromise(Layer.buildWithScope(EmbeddedPostgres.layer(dataDir), scope))
const databaseUrl = Redacted.value(Context.get(pgContext, EmbeddedPostgres).url)
const mock = await startMockUpstream()

type Mode = "off" | "local" | "fused"
const modeEnv: Record<Mode, Record<string, string>> = {
  off: { EMBEDDINGS: "off" },
  local: { EMBEDDINGS: "local", EMBEDDING_CONCURRENCY: "0", MEMORY_RANKING: "cosine" },
  // Defaults, and the only one that embeds memories in the background.
  fused: { EMBEDDINGS: "local" }
}
const modes: ReadonlyArray<Mode> = ["off", "local", "fused"]
const warnings: Array<string> = []
const gateways = {} as Record<Mode, { readonly url: string; readonly pid: number; readonly stop: () => Promise<void> }>
for (const mode of modes) {
  const port = await freePort()
  const child = await startProcess(
    join(root, "src/main.ts"),
    {
      ...gatewayEnvironment(databaseUrl, mock.url),
      // Thousands of searches a minute: the management API's per-client limit is not what is measured.
      RATE_LIMIT_API_PER_MINUTE: "0",
      PORT: String(port),
      ...modeEnv[mode]
    },
    `http://127.0.0.1:${port}/health`,
    (text) => {
      // Shown at the end, but for the one the setup asks for.
      if (!text.includes("extraction worker off")) warnings.push(`${mode}: ${text.trim()}`)
    }
  )
  gateways[mode] = { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => stop(child) }
}

const api = async <T>(mode: Mode, method: string, path: string, body?: unknown): Promise<T> => {
  const response = await fetch(`${gateways[mode].url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const json = (await response.json()) as T
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

// ---- the data -----------------------------------------------------------------------------------

const dataset = (await loadDataset()).slice(0, smoke ? 1 : undefined)
const now = Date.now()

/**
 * Imports a profile's memories oldest first, in calls of up to 1000; a memory that supersedes
 * another goes in a later call than it (its id must exist). `markSupersedes: false` leaves the
 * changes unmarked, as when extraction missed them. Returns key → memory id.
 */
/**
 * Which stored memory each imported one is now. An import leaves out a memory the profile has already
 * (the same type and text, case and runs of white space aside: `MemoriesRepo`'s rule), so its answer is
 * matched to the memories given by their text, not by their place (LoCoMo's held-out conversations 47
 * and 48 each repeat a turn: by place, every later memory would take its neighbour's id).
 */
const textKey = (type: string, content: string) => `${type} ${content.replace(/\s+/g, " ").trim().toLowerCase()}`
const storedIds = (
  stored: Map<string, string>,
  created: ReadonlyArray<{ readonly id: string; readonly type: string; readonly content: string }>,
  given: ReadonlyArray<{ readonly type: string; readonly content: string }>
): ReadonlyArray<string> => {
  for (const memory of created)
    if (!stored.has(textKey(memory.type, memory.content))) stored.set(textKey(memory.type, memory.content), memory.id)
  return given.map((memory) => {
    const id = stored.get(textKey(memory.type, memory.content))
    if (id === undefined) throw new Error(`an imported memory was neither stored nor a repeat: ${memory.content}`)
    return id
  })
}

const importProfile = async (
  externalId: string,
  memories: ReadonlyArray<DatasetMemory>,
  markSupersedes: boolean,
  cuesOf: (memory: DatasetMemory) => ReadonlyArray<string> = () => []
) => {
  await api("fused", "POST", "/api/profiles", { externalId })
  const ids = new Map<string, string>()
  const stored = new Map<string, string>()
  const ordered = [...memories].sort((a, b) => b.createdDaysAgo - a.createdDaysAgo)
  let batch: Array<DatasetMemory> = []
  const flush = async () => {
    if (batch.length === 0) return
    const { memories: created } = await api<{ memories: Array<{ id: string; type: string; content: string }> }>(
      "fused",
      "POST",
      `/api/profiles/${externalId}/memories/import`,
      {
        memories: batch.map((memory) => ({
          content: memory.content,
          cues: cuesOf(memory),
          type: memory.type,
          importance: memory.importance,
          createdAt: new Date(now - memory.createdDaysAgo * DAY).toISOString(),
          ...(memory.occurredAt !== undefined
            ? { occurredAt: memory.occurredAt }
            : memory.occurredDaysAgo !== undefined
              ? { occurredAt: new Date(now - memory.occurredDaysAgo * DAY).toISOString() }
              : {}),
          ...(markSupersedes && memory.supersedes !== undefined
            ? { supersedes: memory.supersedes.map((key) => ids.get(key)!) }
            : {})
        }))
      }
    )
    const batchIds = storedIds(stored, created, batch)
    batch.forEach((memory, i) => ids.set(memory.key, batchIds[i]!))
    batch = []
  }
  for (const memory of ordered) {
    const waitsForBatch = markSupersedes && (memory.supersedes ?? []).some((key) => !ids.has(key))
    if (waitsForBatch || batch.length === 1000) await flush()
    batch.push(memory)
  }
  await flush()
  return ids
}

type Condition = "raw" | "cues"
interface Haystack {
  readonly externalId: string
  readonly variant: "marked" | "unmarked" | "10k"
  readonly condition: Condition
  readonly profile: DatasetProfile
  readonly ids: ReadonlyMap<string, string>
}

const cueFile: Record<string, ReadonlyArray<string>> = JSON.parse(
  await readFile(join(root, "bench/recall/cues/cues.json"), "utf8")
)
const cuesFor = (profile: DatasetProfile) => (memory: DatasetMemory) =>
  (memory as { cues?: ReadonlyArray<string> }).cues ?? cueFile[`${profile.profile}/${memory.key}`] ?? []

log(`recall benchmark (${smoke ? "smoke" : "full"}): importing ${dataset.length} profile(s)`)
const haystacks: Array<Haystack> = []
for (const condition of ["raw", "cues"] as const) {
  for (const profile of dataset) {
    const cues = condition === "cues" ? cuesFor(profile) : undefined
    for (const variant of ["marked", "unmarked"] as const) {
      const externalId = `${profile.profile}-${condition}-${variant}`
      haystacks.push({
        externalId,
        variant,
        condition,
        profile,
        ids: await importProfile(externalId, profile.memories, variant === "marked", cues)
      })
    }
  }
}
const bigBase = dataset[0]!
if (!smoke) {
  // The production condition: memories with cues, as extraction writes them (the filler has cues too).
  const memories = [...bigBase.memories, ...fillerMemories(BIG_PROFILE_SIZE - bigBase.memories.length)]
  const externalId = `${bigBase.profile}-10k`
  haystacks.push({
    externalId,
    variant: "10k",
    condition: "cues",
    profile: bigBase,
    ids: await importProfile(externalId, memories, true, cuesFor(bigBase))
  })
}

// LoCoMo: each conversation one profile, each turn one memory.
const locomo: ReadonlyArray<LocomoConversation> = locomoAvailable()
  ? await loadLocomo(smoke ? ["30", "49"] : undefined)
  : []
if (!locomoAvailable()) log("  LoCoMo skipped: ../shared/datasets/locomo is not there")
const locomoIds = new Map<string, ReadonlyMap<string, string>>()
for (const conversation of locomo) {
  const externalId = `locomo-${conversation.id}`
  await api("fused", "POST", "/api/profiles", { externalId })
  const ids = new Map<string, string>()
  const stored = new Map<string, string>()
  for (let from = 0; from < conversation.memories.length; from += 1000) {
    const batch = conversation.memories.slice(from, from + 1000)
    const { memories: created } = await api<{ memories: Array<{ id: string; type: string; content: string }> }>(
      "fused",
      "POST",
      `/api/profiles/${externalId}/memories/import`,
      {
        memories: batch.map((memory) => ({
          content: memory.content,
          type: "event",
          createdAt: new Date(memory.createdAt).toISOString(),
          occurredAt: new Date(memory.occurredAt).toISOString()
        }))
      }
    )
    const batchIds = storedIds(
      stored,
      created,
      batch.map((memory) => ({ type: "event", content: memory.content }))
    )
    batch.forEach((memory, i) => ids.set(memory.key, batchIds[i]!))
  }
  locomoIds.set(conversation.id, ids)
}
// The request path's usual profile (bench/conversationProfile.ts).
const conversationProfile = locomo.length === 0 ? undefined : locomo[0]!
if (conversationProfile !== undefined) await seedConversationProfile(gateways.fused.url, conversationProfile)

// Every memory embedded before anything is measured.
const embedStarted = performance.now()
await waitForJobs(gateways.fused.url)
const embedSeconds = (performance.now() - embedStarted) / 1000
const totalMemories =
  haystacks.reduce((sum, h) => sum + h.ids.size, 0) + locomo.reduce((sum, c) => sum + c.memories.length, 0)
log(`  ${totalMemories} memories embedded in ${embedSeconds.toFixed(1)} s`)

// ---- recall -------------------------------------------------------------------------------------

interface SearchResult {
  readonly id: string
  readonly content: string
  readonly relevant: boolean
  /** Injection would take it (the scores and `INJECTION_TOKEN_BUDGET` decide). */
  readonly injected: boolean
}

/** The estimated tokens of what injection would take of a search's results. */
const injectedTokens = (memories: ReadonlyArray<SearchResult>) =>
  memories.reduce((sum, memory) => sum + (memory.injected ? lineTokens(memory.content) : 0), 0)

interface Outcome {
  readonly question: Question
  readonly variant: Haystack["variant"]
  readonly condition: Condition
  /** 1-based rank of the first answer among the top 10, if there. */
  readonly rank: number | undefined
  /** The same among what injection takes. */
  readonly injectedRank: number | undefined
  readonly injected: number
  /** Their estimated tokens. */
  readonly tokens: number
  /** For changed facts: the newer value is injected and ranks above every stale one. */
  readonly newerFirst: boolean
}

const ask = async (mode: Mode, haystack: Haystack, question: Question): Promise<Outcome> => {
  const { memories } = await api<{ memories: Array<SearchResult> }>(
    mode,
    "POST",
    `/api/profiles/${encodeURIComponent(haystack.externalId)}/memories/search`,
    {
      query: question.question,
      limit: INJECTED
    }
  )
  const answers = new Set(question.answers.map((key) => haystack.ids.get(key)))
  const stale = new Set((question.stale ?? []).map((key) => haystack.ids.get(key)))
  const injected = memories.filter((memory) => memory.injected)
  const rankIn = (list: ReadonlyArray<SearchResult>) => {
    const index = list.findIndex((memory) => answers.has(memory.id))
    return index === -1 ? undefined : index + 1
  }
  const injectedRank = rankIn(injected)
  const staleRank = injected.findIndex((memory) => stale.has(memory.id))
  return {
    question,
    variant: haystack.variant,
    condition: haystack.condition,
    rank: rankIn(memories),
    injectedRank,
    injected: injected.length,
    tokens: injectedTokens(memories),
    newerFirst: injectedRank !== undefined && (staleRank === -1 || staleRank + 1 > injectedRank)
  }
}

const outcomes: Record<Mode, Array<Outcome>> = { off: [], local: [], fused: [] }
for (const mode of modes) {
  for (const haystack of haystacks) {
    // The unmarked copy serves only the changed-fact questions.
    const questions = haystack.profile.questions.filter(
      (q) => haystack.variant !== "unmarked" || q.category === "changed"
    )
    for (const question of questions) outcomes[mode].push(await ask(mode, haystack, question))
  }
  log(`  recall: ${mode} done`)
}

interface LocomoOutcome {
  readonly split: "tune" | "heldout"
  readonly category: string
  /** 1-based rank of the first evidence turn among the top 10, if there. */
  readonly rank: number | undefined
  /** An evidence turn is among what injection takes. */
  readonly answerInjected: boolean
  /** What injection takes, in estimated tokens. */
  readonly tokens: number
  /** The search's round trip, as the client saw it. */
  readonly ms: number
}
const locomoOutcomes: Record<Mode, Array<LocomoOutcome>> = { off: [], local: [], fused: [] }
for (const mode of modes) {
  for (const conversation of locomo) {
    const ids = locomoIds.get(conversation.id)!
    for (const question of conversation.questions) {
      const started = performance.now()
      const { memories } = await api<{ memories: Array<SearchResult> }>(
        mode,
        "POST",
        `/api/profiles/locomo-${conversation.id}/memories/search`,
        {
          query: question.question,
          limit: 10,
          at: new Date(conversation.now).toISOString()
        }
      )
      const evidence = new Set(question.evidence.map((key) => ids.get(key)))
      const at = memories.findIndex((memory) => evidence.has(memory.id))
      locomoOutcomes[mode].push({
        split: conversation.split,
        category: LOCOMO_CATEGORIES[question.category],
        rank: at === -1 ? undefined : at + 1,
        answerInjected: memories.some((memory) => memory.injected && evidence.has(memory.id)),
        tokens: injectedTokens(memories),
        ms: performance.now() - started
      })
    }
  }
  if (locomo.length > 0) log(`  LoCoMo: ${mode} done`)
}

interface LocomoScores {
  readonly n: number
  readonly r1: number
  readonly r5: number
  readonly r10: number
  readonly mrr: number
  readonly answerInjected: number
  readonly tokensPerQuestion: number
  readonly searchP50Ms: number
}
const locomoScore = (list: ReadonlyArray<LocomoOutcome>): LocomoScores => {
  const n = list.length
  const share = (k: number) =>
    n === 0 ? Number.NaN : list.filter((o) => o.rank !== undefined && o.rank <= k).length / n
  return {
    n,
    r1: share(1),
    r5: share(5),
    r10: share(10),
    mrr: n === 0 ? Number.NaN : list.reduce((sum, o) => sum + (o.rank === undefined ? 0 : 1 / o.rank), 0) / n,
    answerInjected: n === 0 ? Number.NaN : list.filter((o) => o.answerInjected).length / n,
    tokensPerQuestion: n === 0 ? Number.NaN : list.reduce((sum, o) => sum + o.tokens, 0) / n,
    searchP50Ms: n === 0 ? Number.NaN : median(list.map((o) => o.ms))
  }
}
const locomoGroups =
  locomo.length === 0
    ? []
    : (["heldout", "tune"] as const)
        .flatMap((split) =>
          [...Object.values(LOCOMO_CATEGORIES), "all"].map((category) => ({
            split,
            category,
            scores: Object.fromEntries(
              modes.map((mode) => [
                mode,
                locomoScore(
                  locomoOutcomes[mode].filter(
                    (o) => o.split === split && (category === "all" || o.category === category)
                  )
                )
              ])
            ) as Record<Mode, LocomoScores>
          }))
        )
        .filter((group) => group.scores.fused.n > 0)

interface Scores {
  readonly n: number
  readonly r1: number
  readonly r3: number
  readonly r10: number
  readonly mrr: number
  /** An answer among what injection takes. */
  readonly answerInjected: number
  readonly injectedPerQuestion: number
  /** What injection takes for a question with an answer, in estimated tokens. */
  readonly tokensPerAnswered: number
  readonly newerFirst: number
}

const score = (list: ReadonlyArray<Outcome>): Scores => {
  const n = list.length
  const share = (f: (o: Outcome) => boolean) => (n === 0 ? Number.NaN : list.filter(f).length / n)
  return {
    n,
    r1: share((o) => o.rank !== undefined && o.rank <= 1),
    r3: share((o) => o.rank !== undefined && o.rank <= 3),
    r10: share((o) => o.rank !== undefined),
    mrr: n === 0 ? Number.NaN : list.reduce((sum, o) => sum + (o.rank === undefined ? 0 : 1 / o.rank), 0) / n,
    answerInjected: share((o) => o.injectedRank !== undefined),
    injectedPerQuestion: n === 0 ? Number.NaN : list.reduce((sum, o) => sum + o.injected, 0) / n,
    tokensPerAnswered: n === 0 ? Number.NaN : list.reduce((sum, o) => sum + o.tokens, 0) / n,
    newerFirst: share((o) => o.newerFirst)
  }
}

interface Group {
  readonly name: string
  readonly condition: Condition
  readonly category: Category
  readonly select: (o: Outcome) => boolean
}
const categoryGroups = (condition: Condition): ReadonlyArray<Group> => {
  const of = (variant: Haystack["variant"], category: Category) => (o: Outcome) =>
    o.condition === condition && o.variant === variant && o.question.category === category
  return [
    { name: "paraphrase (no shared word)", condition, category: "paraphrase", select: of("marked", "paraphrase") },
    { name: "keyword (shared words)", condition, category: "keyword", select: of("marked", "keyword") },
    { name: "changed fact (supersede marked)", condition, category: "changed", select: of("marked", "changed") },
    { name: "changed fact (not marked)", condition, category: "changed", select: of("unmarked", "changed") },
    { name: "time", condition, category: "time", select: of("marked", "time") },
    { name: "nothing answers", condition, category: "none", select: of("marked", "none") }
  ]
}
const big = `${BIG_PROFILE_SIZE.toLocaleString("en")} memories`
const bigGroups: ReadonlyArray<Group> = smoke
  ? []
  : [
      {
        name: `${bigBase.profile}, ${bigBase.memories.length} memories: answerable questions`,
        condition: "cues",
        category: "keyword",
        select: (o) =>
          o.condition === "cues" &&
          o.variant === "marked" &&
          o.question.id.startsWith(`${bigBase.profile}-`) &&
          o.question.category !== "none"
      },
      {
        name: `${bigBase.profile}, ${big}: the same questions`,
        condition: "cues",
        category: "keyword",
        select: (o) => o.variant === "10k" && o.question.category !== "none"
      },
      {
        name: `${bigBase.profile}, ${big}: nothing answers`,
        condition: "cues",
        category: "none",
        select: (o) => o.variant === "10k" && o.question.category === "none"
      }
    ]
const groups: ReadonlyArray<Group> = [...categoryGroups("raw"), ...categoryGroups("cues"), ...bigGroups]
const splits = ["tune", "heldout", "all"] as const
const recall: Array<{
  readonly group: string
  readonly condition: Condition
  readonly scores: Record<string, Record<Mode, Scores>>
}> = []
for (const group of groups) {
  const scores: Record<string, Record<Mode, Scores>> = {}
  for (const split of splits) {
    scores[split] = Object.fromEntries(
      modes.map((mode) => [
        mode,
        score(outcomes[mode].filter((o) => group.select(o) && (split === "all" || o.question.split === split)))
      ])
    ) as Record<Mode, Scores>
  }
  recall.push({ group: group.name, condition: group.condition, scores })
}

// ---- the request path -----------------------------------------------------------------------

const scrape = async (mode: Mode) => (await (await fetch(`${gateways[mode].url}/metrics`)).text()).split("\n")
/** The sum of a metric's samples whose labels include all of `labels`. */
const sampleOf = (lines: ReadonlyArray<string>, series: string, labels: ReadonlyArray<string> = []) =>
  lines
    .filter((line) => line.startsWith(series) && labels.every((label) => line.includes(label)))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0)

const labelledQuestions = dataset.flatMap((profile) => profile.questions.map((q) => q.question))
interface Cost {
  readonly p50: number
  readonly p99: number
  readonly cpuMsPerRequest: number
  readonly rps: number
  /** Sequential requests that did not wait for the model (the keywords alone were confident). */
  readonly modelSkipped: number
  /** Requests at 16 connections that ranked with the message's vector (or did not need it). */
  readonly semanticShare16: number
  readonly loopDelayP99Ms16: number
  readonly semanticShare: number
  readonly loopDelayP99Ms: number
  /** Profile cache misses during the cell (each one reads the profile from the database). */
  readonly cacheMisses: number
  /** CPU the other gateways used meanwhile (they share the gateways' CPU). */
  readonly othersCpuMs: number
  readonly errors: number
}

const sequential = smoke ? 40 : 400
const throughputMs = smoke ? 1000 : 6000

/** Direct to the mock: the baseline the added latency is measured against. */
const direct = async () => {
  const body = newMessageBody(labelledQuestions)
  const { samples } = await load({ url: `${mock.url}/v1`, body, concurrency: 1, requests: sequential })
  return median(samples.map((s) => s.ms))
}

const costOf = async (mode: Mode, user: string, questions: ReadonlyArray<string>): Promise<Cost> => {
  const chatBody = newMessageBody(questions)
  const url = `${gateways[mode].url}/v1`
  const headers = { "x-service-id": user }
  await load({ url, body: chatBody, concurrency: 4, requests: 40, headers }) // warm: the profile is cached
  const beforeOne = await scrape(mode)
  const cpuBefore = await cpuMs(gateways[mode].pid)
  const one = await load({ url, body: (n) => chatBody(n + 1000), concurrency: 1, requests: sequential, headers })
  const cpuAfter = await cpuMs(gateways[mode].pid)
  const afterOne = await scrape(mode)
  const before16 = await scrape(mode)
  const sixteen = await load({
    url,
    body: (n) => chatBody(n + 50_000),
    concurrency: 16,
    durationMs: throughputMs,
    headers
  })
  const after16 = await scrape(mode)
  const before = await scrape(mode)
  const others = modes.filter((other) => other !== mode)
  const othersBefore = await Promise.all(others.map((other) => cpuMs(gateways[other].pid)))
  const many = await load({
    url,
    body: (n) => chatBody(n + 100_000),
    concurrency: 64,
    durationMs: throughputMs,
    headers
  })
  const othersAfter = await Promise.all(others.map((other) => cpuMs(gateways[other].pid)))
  const after = await scrape(mode)
  const retrievals = (lines: ReadonlyArray<string>, labels?: ReadonlyArray<string>) =>
    sampleOf(lines, "gateway_memory_retrievals_total", labels)
  /** The share of rankings between two scrapes that had the message's vector, or did not need it. */
  const semanticShare = (from: ReadonlyArray<string>, to: ReadonlyArray<string>) => {
    const served = (lines: ReadonlyArray<string>) =>
      retrievals(lines, ['semantic="used"']) + retrievals(lines, ['semantic="not_needed"'])
    return (served(to) - served(from)) / Math.max(1, retrievals(to) - retrievals(from))
  }
  const ok = one.samples.filter((s) => s.ok).map((s) => s.ms)
  return {
    p50: median(ok),
    p99: percentile(ok, 99),
    cpuMsPerRequest: (cpuAfter - cpuBefore) / sequential,
    rps: many.samples.filter((s) => s.ok).length / (many.elapsedMs / 1000),
    modelSkipped:
      (retrievals(afterOne, ['semantic="not_needed"']) - retrievals(beforeOne, ['semantic="not_needed"'])) /
      Math.max(1, retrievals(afterOne) - retrievals(beforeOne)),
    semanticShare16: semanticShare(before16, after16),
    loopDelayP99Ms16: sampleOf(after16, "gateway_event_loop_delay_p99_seconds ") * 1000,
    semanticShare: semanticShare(before, after),
    loopDelayP99Ms: sampleOf(after, "gateway_event_loop_delay_p99_seconds ") * 1000,
    cacheMisses:
      sampleOf(after, "gateway_context_cache_lookups_total", ['result="miss"']) -
      sampleOf(before, "gateway_context_cache_lookups_total", ['result="miss"']),
    othersCpuMs: othersAfter.reduce((sum, ms, i) => sum + ms - othersBefore[i]!, 0),
    errors: [...one.samples, ...sixteen.samples, ...many.samples].filter((s) => !s.ok).length
  }
}

await mock.configure({ latencyMs: 0 })
const costs: Record<string, { readonly directMs: number; readonly off: Cost; readonly fused: Cost }> = {}
// A conversation's 300 memories, a profile of the labelled size, and the big one.
const costProfiles = [
  ...(conversationProfile === undefined
    ? []
    : [
        {
          name: `${CONVERSATION_PROFILE_SIZE} conversational memories`,
          externalId: CONVERSATION_USER,
          questions: conversationProfile.questions.map((q) => q.question)
        }
      ]),
  ...[haystacks[0]!, ...haystacks.filter((h) => h.variant === "10k")].map((haystack) => ({
    name: `${haystack.ids.size.toLocaleString("en")} memories`,
    externalId: haystack.externalId,
    questions: labelledQuestions
  }))
]
for (const { name, externalId, questions } of costProfiles) {
  const directMs = await direct()
  costs[name] = {
    directMs,
    off: await costOf("off", externalId, questions),
    fused: await costOf("fused", externalId, questions)
  }
  log(`  cost: ${name} done`)
}

for (const mode of modes) await gateways[mode].stop()
await mock.close()
await Effect.runPromise(Scope.close(scope, Exit.void))
await rm(dataDir, { recursive: true, force: true })

// ---- the report -----------------------------------------------------------------------------

const pct = (n: number) => (Number.isFinite(n) ? `${Math.round(n * 100)}%` : "–")
const num = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "–")
/** What injection does with `fused`, the figure the targets are about. */
const injectedFigure = (group: Group, s: Scores) =>
  group.category === "none"
    ? `${num(s.injectedPerQuestion, 1)} injected`
    : group.category === "changed"
      ? `newer first ${pct(s.newerFirst)}`
      : `answer injected ${pct(s.answerInjected)} · ${num(s.tokensPerAnswered, 0)} tokens`
const conditionName = { raw: "as imported", cues: "with cues" } as const
const rows: Array<string> = []
const splitRows: Array<string> = []
groups.forEach((group, i) => {
  const { scores } = recall[i]!
  const all = scores["all"]!
  if (all.fused.n === 0) return
  const line = (s: Scores) =>
    group.category === "none"
      ? `${num(s.injectedPerQuestion, 1)} injected`
      : `${pct(s.r1)} / ${pct(s.r3)} / ${pct(s.r10)} · ${num(s.mrr)}`
  rows.push(
    `| ${group.name} | ${conditionName[group.condition]} | ${all.fused.n} | ${line(all.off)} | ${line(all.local)} | ${line(all.fused)} | ${injectedFigure(group, all.fused)} |`
  )
  splitRows.push(
    `| ${group.name} | ${conditionName[group.condition]} | ${injectedFigure(group, scores["tune"]!.fused)} (${scores["tune"]!.fused.n}) | ${injectedFigure(group, scores["heldout"]!.fused)} (${scores["heldout"]!.fused.n}) |`
  )
})
const costRow = (name: string, mode: string, c: Cost, directMs: number) =>
  `| ${name} | ${mode} | ${num(c.p50 - directMs)} | ${num(c.p99 - directMs)} | ${num(c.cpuMsPerRequest)} | ` +
  `${mode === "off" ? "–" : pct(c.modelSkipped)} | ${num(c.rps, 0)} | ` +
  `${mode === "off" ? "–" : pct(c.semanticShare16)} | ${num(c.loopDelayP99Ms16, 1)} | ` +
  `${mode === "off" ? "–" : pct(c.semanticShare)} | ${num(c.loopDelayP99Ms, 1)} | ${num(c.cacheMisses, 0)} · ${num(c.othersCpuMs, 0)} |`
const costRows = Object.entries(costs).flatMap(([name, c]) => [
  costRow(name, "off", c.off, c.directMs),
  costRow(name, "fused (local model)", c.fused, c.directMs)
])
const errors = Object.values(costs).reduce((sum, c) => sum + c.off.errors + c.fused.errors, 0)

const environment =
  `Node ${process.version}, commit ${commit}, nproc ${cpus().length}, ${cpus()[0]?.model ?? "cpu"}, ` +
  `gateways on CPU 1 and mock/loader/PostgreSQL on CPU 0: ${hasTaskset ? "yes" : "no (taskset missing)"}`
const markdown = [
  `Retrieval benchmark ${smoke ? "(smoke: one profile, short cells)" : ""} — ${new Date().toISOString()}`,
  "",
  environment,
  `${dataset.length} labelled profile(s), ${totalMemories} memories in all (embedded in ${embedSeconds.toFixed(0)} s), ` +
    `${outcomes.fused.length} questions asked per mode.`,
  "",
  'Recall@1 / @3 / @10 · MRR@10 of the answer among the ranked memories (for "nothing answers": memories above the relevance floor, of at most 10).',
  "The last column is what injection would do with `fused`: an answer among the memories it takes (the scores and `INJECTION_TOKEN_BUDGET` decide how many) and their estimated tokens; for changed facts, the newer value injected ahead of the stale one.",
  "",
  "| Questions | Memories | n | off (keywords) | local (cosine only) | fused (default) | Injected (fused) |",
  "|---|---|---|---|---|---|---|",
  ...rows,
  "",
  "The ranking model was fitted on the `tune` questions only (`npm run fit:ranking`); the held-out third shows what that is worth on questions never looked at:",
  "",
  "| Questions | Memories | Injected (fused), tune (n) | Injected (fused), held out (n) |",
  "|---|---|---|---|",
  ...splitRows,
  "",
  ...(locomoGroups.length === 0
    ? []
    : [
        `LoCoMo (${locomo.length} conversation(s): ${locomo.map((c) => c.id).join(", ")}; fitted on ${LOCOMO_TUNE.join(", ")}, held out ${LOCOMO_HELDOUT.join(", ")}): ` +
          "each dialog turn a memory, each question of categories 1–4 a search of 10 as of the conversation's end; " +
          "recall@1 / @5 / @10 · MRR@10 of an evidence turn (the first found); injected: an evidence turn among what injection takes with `fused`, and its estimated tokens per question; " +
          "the search's p50 round trip (ms) for off · fused.",
        "",
        "| Split | Category | n | off (keywords) | local (cosine only) | fused (default) | Injected (fused) | Search p50 (ms) |",
        "|---|---|---|---|---|---|---|---|",
        ...locomoGroups.map(({ split, category, scores }) => {
          const cell = (s: LocomoScores) => `${pct(s.r1)} / **${pct(s.r5)}** / ${pct(s.r10)} · ${num(s.mrr)}`
          return `| ${split === "heldout" ? "held out" : "tune"} | ${category} | ${scores.fused.n} | ${cell(scores.off)} | ${cell(scores.local)} | ${cell(scores.fused)} | ${pct(scores.fused.answerInjected)} · ${num(scores.fused.tokensPerQuestion, 0)} tokens | ${num(scores.off.searchP50Ms, 1)} · ${num(scores.fused.searchP50Ms, 1)} |`
        }),
        ""
      ]),
  `Request path: /v1/chat/completions, a different question each request, mock provider answering at once. ` +
    `Added = gateway − direct (direct p50 ${num(Object.values(costs)[0]?.directMs ?? Number.NaN)} ms). ` +
    `${sequential} sequential requests for latency and CPU, then ${throughputMs / 1000} s at 16 and at 64 connections. ` +
    "Model not waited for: the share of the sequential requests whose keywords alone were confident (`not_needed`). " +
    "Semantic: the share of requests that ranked with their message's vector or did not need it.",
  "",
  "| Profile | Mode | Added p50 (ms) | Added p99 (ms) | CPU ms / request | Model not waited for | Throughput c=64 (req/s) | Semantic at c=16 | Loop delay p99 at c=16 (ms) | Semantic at c=64 | Loop delay p99 at c=64 (ms) | At c=64: cache misses · CPU ms of the other gateways |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|",
  ...costRows,
  "",
  `Errors: ${errors}.`,
  ...(warnings.length === 0
    ? []
    : ["", "Gateway warnings during the run:", "", ...warnings.slice(0, 20).map((w) => `    ${w.slice(0, 300)}`)])
].join("\n")

log(`\n${markdown}`)
if (!smoke) {
  await mkdir(join(root, "bench/results"), { recursive: true })
  await writeFile(
    join(root, "bench/results/recall.json"),
    JSON.stringify({ environment, recall, locomo: locomoGroups, costs, embedSeconds }, null, 2)
  )
  await writeFile(join(root, "bench/results/recall.md"), `${markdown}\n`)
}
if (errors > 0) process.exitCode = 1
