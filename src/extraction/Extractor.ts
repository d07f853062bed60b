import { Clock, Context, DateTime, Effect, Layer, Option, Result, Schema } from "effect"
import { firstIssue } from "../domain/schemaIssues.ts"
import { isStorableJson } from "../domain/storableText.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import { Embedder } from "../embedding/Embedder.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Retrieval } from "../retrieval/Retrieval.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import { NamespaceSettingsStore } from "../settings/NamespaceSettingsStore.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { validateTraitValue } from "../traits/validateTraitValue.ts"
import { capConversation } from "./capConversation.ts"
import { decodeExtraction, decodeSummary, labelMemory, type MemoryCandidate, MemoryItem } from "./decodeReply.ts"
import { ExtractionConfig } from "./ExtractionConfig.ts"
import { ExtractionCredentials, type ExtractionKeyRevoked } from "./ExtractionCredentials.ts"
import { ExtractionCallFailed, ExtractionModel } from "./ExtractionModel.ts"
import { type ExtractedTrait, ExtractionRepo, type TraitOutcome } from "./ExtractionRepo.ts"
import { jobAttachments } from "./jobAttachments.ts"
import { knownMemoriesFor, prepareMemories } from "./prepareMemories.ts"
import { extractionMessages, summaryMessages } from "./prompts.ts"

/** What a job did, kept on the job row. */
export interface JobResult {
  readonly traits: Readonly<Record<TraitOutcome, number>>
  readonly memories: { readonly created: number; readonly reinforced: number }
  /** Items of the reply that were not stored, and why. */
  readonly dropped: ReadonlyArray<string>
  readonly summaryQueued: boolean
  readonly summaryVersion: number | null
  /** The images and files of the job's messages the model was sent. */
  readonly attachmentsRead: { readonly images: number; readonly files: number }
  /**
   * What the job could not do as asked: images and files not read, and why; a namespace's trait
   * schema that could not be used. Never a silent drop.
   */
  readonly notes: ReadonlyArray<string>
}

/**
 * One job's work, split in two: the model call (slow, outside any transaction), then `apply`,
 * the database writes, which the worker runs in one transaction with completing the job.
 */
export interface ExtractionPlan {
  readonly apply: Effect.Effect<JobResult>
}

const decodeMemory = Schema.decodeUnknownResult(MemoryItem)

const emptyResult = (dropped: ReadonlyArray<string> = [], notes: ReadonlyArray<string> = []): JobResult => ({
  traits: { created: 0, updated: 0, reinforced: 0, kept_manual: 0, kept_existing: 0 },
  memories: { created: 0, reinforced: 0 },
  dropped,
  summaryQueued: false,
  summaryVersion: null,
  attachmentsRead: { images: 0, files: 0 },
  notes
})

/** Items dropped from one reply that are kept on the job (the full list is logged at debug level). */
const MAX_DROPPED_KEPT = 20

export class Extractor extends Context.Service<
  Extractor,
  {
    /**
     * A turn's or an ingest's memories and traits. Fails (and the job is retried) when the model or a
     * required plugin fails; fails for good when the key that made the turn was revoked and its
     * provider key would have been used (`ExtractionCredentials`).
     */
    readonly extract: (job: ClaimedJob) => Effect.Effect<ExtractionPlan, ExtractionCallFailed | ExtractionKeyRevoked>
    /** The profile's summary, rewritten from its traits and top memories. */
    readonly summarize: (job: ClaimedJob) => Effect.Effect<ExtractionPlan, ExtractionCallFailed>
    /** A turn's job failed for good: its images and files are not held for it any longer. */
    readonly release: (job: ClaimedJob) => Effect.Effect<void>
  }
>()("gateway/extraction/Extractor") {
  static readonly layer = Layer.effect(
    Extractor,
    Effect.gen(function* () {
      const store = yield* ExtractionRepo
      const model = yield* ExtractionModel
      const credentials = yield* ExtractionCredentials
      const traitSchema = yield* TraitSchema
      const namespaces = yield* NamespaceSettingsStore
      const host = yield* PluginHost
      const cache = yield* SnapshotCache
      const retrieval = yield* Retrieval
      const embedder = yield* Embedder
      const config = yield* ExtractionConfig
      const { dedupeSimilarity, maxInputCharacters } = config
      const halfLives = (yield* RetrievalConfig).memoryHalfLifeDays

      /**
       * Trait values checked against the schema in effect for the job: the key must be declared for
       * extraction, and a trait with a `behaviour` only takes values from that plugin.
       */
      const validTraits = (
        definitions: ReadonlyMap<string, TraitDefinition>,
        source: string,
        candidates: ReadonlyArray<{ readonly key: string; readonly value: unknown; readonly confidence: number }>,
        dropped: Array<string>
      ) => {
        const valid: Array<ExtractedTrait> = []
        for (const candidate of candidates) {
          const definition = definitions.get(candidate.key)
          const owner = definition?.behaviour ?? "model"
          if (definition === undefined || !definition.extractionEnabled || owner !== source) {
            dropped.push(`${source}: trait ${candidate.key} is not extractable by ${source}`)
            continue
          }
          // Plugins' values are not decoded like the model's: text the database cannot hold is dropped here.
          if (!isStorableJson(candidate.value)) {
            dropped.push(`${source}: trait ${candidate.key}: text with NUL characters or unpaired surrogates`)
            continue
          }
          const checked = validateTraitValue(host.valueTypes, { _tag: "Declared", definition }, candidate.value)
          if (Result.isFailure(checked)) {
            dropped.push(`${source}: trait ${candidate.key}: ${checked.failure}`)
            continue
          }
          valid.push({
            key: candidate.key,
            value: checked.success.value,
            valueType: checked.success.valueType,
            category: definition.category,
            confidence: Math.min(1, Math.max(0, candidate.confidence))
          })
        }
        return valid
      }

      const planExtraction = Effect.fn("Extractor.planExtraction")(function* (job: ClaimedJob) {
        const { profileId } = job
        // A turn made with a key bound to a provider key is read with that key (checked first: a revoked one fails the job).
        const apiKey = yield* credentials.forJob(job)
        const [turn, traits, profile, stored] = yield* Effect.all(
          [
            store.conversation(job.messageIds),
            store.traits(profileId),
            store.profile(profileId),
            store.attachments(job.messageIds)
          ],
          { concurrency: 4 }
        )
        // The app's own extraction, read once per job: a change applies to the next job.
        const settings = yield* namespaces.get(profile.namespace)
        // The model (and the plugins) get at most EXTRACTION_MAX_INPUT_CHARACTERS of it, the newest.
        const capped = capConversation(turn, maxInputCharacters)
        const media = jobAttachments(
          stored,
          config,
          maxInputCharacters - capped.reduce((sum, line) => sum + line.content.length, 0)
        )
        const conversation = capped.map((line) => {
          const refs = line.id === undefined ? undefined : media.byMessage.get(line.id)
          return refs === undefined ? line : { ...line, attachments: refs }
        })
        const notes = [...media.notes]
        const document =
          job.input === null || !("data" in job.input)
            ? undefined
            : { text: job.input.data, source: job.input.source, receivedAt: DateTime.toDate(job.createdAt) }
        if (conversation.length === 0 && document === undefined)
          return { apply: Effect.succeed(emptyResult([], notes)) }

        // The memories closest to what was said, so the model can see what it repeats or changes.
        const snapshot = yield* cache.snapshot(profile)
        // Erased while the job waited: nothing to learn for it.
        if (Option.isNone(snapshot)) return { apply: Effect.succeed(emptyResult(["the profile was erased"])) }
        const index = snapshot.value.memories
        const input =
          document?.text ??
          conversation
            .filter((line) => line.role === "user")
            .map((line) => line.content)
            .join("\n")
        const known = yield* knownMemoriesFor(retrieval, index, input, yield* Clock.currentTimeMillis, halfLives)

        // The namespace's own trait schema replaces the gateway's; one that names a plugin removed since falls back.
        const namespaceSchema =
          settings.traitSchema === null ? undefined : traitSchema.forNamespace(settings.traitSchema)
        if (namespaceSchema !== undefined && Result.isFailure(namespaceSchema))
          notes.push(`the namespace's trait schema cannot be used (${namespaceSchema.failure}): the gateway's was used`)
        const base =
          namespaceSchema === undefined
            ? traitSchema.definitions
            : Result.getOrElse(namespaceSchema, () => traitSchema.definitions)
        // Declarations were checked when the request came in; a plugin removed since then falls back.
        const definitions = Result.getOrElse(traitSchema.withRequestTraits(job.traitDefinitions, base), () => base)
        const replyContext = {
          categories: new Set(settings.memoryCategories.map((category) => category.name)),
          attachments: media.kinds
        }
        const forModel = [...definitions.values()].filter((d) => d.extractionEnabled && d.behaviour === null)
        const [reply, contributions] = yield* Effect.all(
          [
            model.complete(
              extractionMessages({
                definitions: forModel,
                knownTraits: traits,
                knownMemories: known.known,
                conversation: conversation.length === 0 ? undefined : conversation,
                document,
                attachments: media.sent,
                categories: settings.memoryCategories,
                instructions: settings.extractionInstructions
              }),
              { work: "extraction", apiKey }
            ),
            host
              .extract({
                profileId,
                messages:
                  document === undefined
                    ? conversation.map((line) => ({ role: line.role, content: line.content }))
                    : [{ role: "user", content: document.text }],
                traits,
                definitions
              })
              .pipe(
                Effect.mapError(
                  (failure) =>
                    new ExtractionCallFailed({
                      message: `plugin ${failure.plugin} failed in ${failure.hook}: ${failure.reason}`
                    })
                )
              )
          ],
          { concurrency: 2 }
        )

        const candidates = decodeExtraction(reply, replyContext)
        const dropped = [...candidates.dropped]
        const valid = validTraits(definitions, "model", candidates.traits, dropped)
        const memories: Array<MemoryCandidate> = [...candidates.memories]
        for (const { contribution, plugin } of contributions) {
          valid.push(...validTraits(definitions, plugin, contribution.traits ?? [], dropped))
          for (const memory of contribution.memories ?? []) {
            const decoded = decodeMemory(memory)
            if (Result.isSuccess(decoded))
              memories.push(labelMemory(decoded.success, replyContext, dropped, `${plugin}: memory`))
            else dropped.push(`${plugin}: memory: ${firstIssue(decoded.failure).message}`)
          }
        }
        const prepared = yield* prepareMemories(embedder, index, memories, known.ids, dedupeSimilarity, dropped)
        if (dropped.length > 0) {
          yield* Effect.logInfo(`extraction job ${job.id}: ${dropped.length} item(s) dropped`)
          yield* Effect.logDebug("dropped extraction items", { jobId: job.id, dropped })
        }

        const provenance = { jobId: job.id, messageIds: job.messageIds }
        const apply = Effect.gen(function* () {
          const outcomes = yield* Effect.forEach(valid, (trait) => store.applyTrait(profileId, trait, provenance))
          const memoryOutcomes = yield* Effect.forEach(prepared, (memory) =>
            store.applyMemory(profileId, memory, provenance)
          )
          const result = { ...emptyResult(dropped.slice(0, MAX_DROPPED_KEPT), notes), attachmentsRead: media.read }
          const traitCounts = { ...result.traits }
          for (const outcome of outcomes) traitCounts[outcome]++
          const memoryCounts = {
            created: memoryOutcomes.filter((outcome) => outcome === "created").length,
            reinforced: memoryOutcomes.filter((outcome) => outcome === "reinforced").length
          }
          // New information (not repeats) counts towards rewriting the summary.
          const changes = traitCounts.created + traitCounts.updated + memoryCounts.created
          const { summaryQueued } = yield* store.noteChanges(profileId, changes)
          return { ...result, traits: traitCounts, memories: memoryCounts, summaryQueued }
        })
        return { apply }
      })

      const planSummary = Effect.fn("Extractor.planSummary")(function* (job: ClaimedJob) {
        const { profileId } = job
        const [profile, traits, memories] = yield* Effect.all(
          [store.profile(profileId), store.traits(profileId), store.topMemories(profileId)],
          { concurrency: 3 }
        )
        if (traits.length === 0 && memories.length === 0)
          return { apply: Effect.succeed(emptyResult(["nothing to summarise"])) }
        const reply = yield* model.complete(summaryMessages({ previousSummary: profile.summary, traits, memories }), {
          work: "summary"
        })
        return Option.match(decodeSummary(reply), {
          onNone: () => ({ apply: Effect.succeed(emptyResult(["the reply has no usable summary"])) }),
          onSome: (summary) => ({
            apply: Effect.map(store.writeSummary(profileId, summary), (version) => ({
              ...emptyResult(),
              summaryVersion: version
            }))
          })
        })
      })

      // Whatever the job made of them, its messages' images and files are let go with its writes.
      const extract = (job: ClaimedJob) =>
        Effect.map(planExtraction(job), (plan) => ({
          apply: Effect.tap(plan.apply, () => store.releaseAttachments(job.messageIds))
        }))

      return Extractor.of({
        extract,
        summarize: planSummary,
        release: (job) => store.releaseAttachments(job.messageIds)
      })
    })
  ).pipe(
    Layer.provide([
      Embedder.layer,
      SnapshotCache.layer,
      TraitSchema.layer,
      Retrieval.layer,
      ExtractionRepo.layer,
      ExtractionModel.layer,
      ExtractionCredentials.layer,
      NamespaceSettingsStore.layer
    ])
  )
}
