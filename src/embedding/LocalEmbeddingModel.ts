import { Worker } from "node:worker_threads"
import { Deferred, Effect, Layer, Metric } from "effect"
import { AiError, EmbeddingModel } from "effect/ai"
import { embeddingThreads } from "../observability/metrics.ts"
import type { EmbeddingSettings } from "./EmbeddingConfig.ts"
import { EmbeddingPriority } from "./EmbeddingPriority.ts"
import { type LocalGraph, type LocalModelThreadData, type LocalRuntime, localModelId } from "./localModel.ts"

/** Texts of background work sent to a thread at once: a query waits behind at most this many. */
const DOCUMENT_SLICE = 8
/**
 * Queries sent to a thread at once (they queue while it is busy and go together): few enough that
 * a slice takes well under a request's budget.
 */
const QUERY_SLICE = 8
/** A thread that dies is started again after this long (and never more often). */
const RESTART_DELAY_MS = 1000
/**
 * The model thread's young generation: what it allocates per text is small and short-lived, and
 * V8's default (tens of MiB, grown under traffic and kept) was about 25 MiB of the idle RSS here for
 * no measurable speed (`bench/localModelRss.ts`).
 */
const YOUNG_GENERATION_MB = 2

interface Job {
  readonly text: string
  settle: ((result: Float32Array | Error) => void) | undefined
}

/** A thread's first message once its model is loaded. */
export interface ReadyMessage {
  readonly type: "ready"
  readonly dimensions: number
  readonly runtime: LocalRuntime
  readonly fallbackReason: string | undefined
  /** Where ONNX Runtime's graph came from (undefined on TensorFlow.js). */
  readonly graph: LocalGraph | undefined
  /** Whether the thread loaded TensorFlow.js (only to run the model on it). */
  readonly tensorflowJs: boolean
  /** From the thread's start to its model's first inference done. */
  readonly loadMs: number
}

type ThreadMessage =
  | ReadyMessage
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "vectors"; readonly id: number; readonly data: Float32Array; readonly dimensions: number }
  | { readonly type: "error"; readonly id: number; readonly message: string }

interface Thread {
  worker: Worker
  ready: boolean
  /** The jobs it is embedding now (none: idle). */
  busy: ReadonlyArray<Job> | undefined
  batchId: number
}

const threadFile = new URL(`./localModelThread${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url)

const failure = (description: string) =>
  AiError.make({
    module: "LocalEmbeddingModel",
    method: "embedMany",
    reason: new AiError.UnknownError({ description })
  })

/**
 * The local model in a pool of worker threads (`EMBEDDING_THREADS`), started with the first text to
 * embed. Requests queue in two lines,
 * queries before background work; an idle thread takes the newest queries together (so concurrent
 * queries share one model call) or a small slice of background work, so a query waits behind at
 * most one slice. A query whose request stopped waiting leaves the line. A thread that dies is replaced; its jobs fail (and are retried by their
 * callers: a query falls back to keywords, a job runs again).
 */
export const LocalEmbeddingModel = {
  modelId: localModelId(),
  /** `dataDir`: `DATA_DIR`, where the model's ONNX graph may be kept (beside the model package first). */
  layer: (settings: EmbeddingSettings, dataDir?: string) =>
    Layer.effect(
      EmbeddingModel.EmbeddingModel,
      Effect.gen(function* () {
        const queries: Array<Job> = []
        const documents: Array<Job> = []
        const threads: Array<Thread> = []
        let closing = false
        let loadError: string | undefined
        // Which runtime the first thread to load runs the model with, and how it loaded (logged once).
        const loaded = Deferred.makeUnsafe<ReadyMessage>()
        yield* Deferred.await(loaded).pipe(
          Effect.flatMap(({ fallbackReason, graph, loadMs, runtime }) =>
            fallbackReason === undefined
              ? Effect.logDebug(
                  `local embedding model running on ${runtime}, loaded in ${loadMs} ms, its graph ${
                    graph?.source === "cached"
                      ? `read from ${graph.file}`
                      : `built from the weights${graph?.file === undefined ? " (no cache directory could be written)" : `, kept in ${graph.file}`}`
                  }`
                )
              : Effect.logWarning(`local embedding model running on ${runtime} (slower): ${fallbackReason}`)
          ),
          Effect.forkScoped
        )

        const dispatch = () => {
          for (const thread of threads) {
            if (!thread.ready || thread.busy !== undefined) continue
            // Newest queries first: under overload the oldest are about to run out of time anyway.
            const batch = (
              queries.length > 0
                ? queries.splice(Math.max(0, queries.length - QUERY_SLICE))
                : documents.splice(0, DOCUMENT_SLICE)
            ).filter((job) => job.settle !== undefined)
            if (batch.length === 0) {
              if (queries.length + documents.length === 0) return
              continue
            }
            thread.busy = batch
            thread.worker.postMessage({ id: ++thread.batchId, texts: batch.map((job) => job.text) })
          }
        }

        const settleAll = (jobs: ReadonlyArray<Job>, error: Error) => {
          for (const job of jobs) job.settle?.(error)
        }

        const start = (thread?: Thread): Thread => {
          const workerData: LocalModelThreadData = { dataDir }
          const worker = new Worker(threadFile, {
            stdout: true,
            stderr: true,
            workerData,
            resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB }
          })
          const current: Thread = thread ?? { worker, ready: false, busy: undefined, batchId: 0 }
          current.worker = worker
          current.ready = false
          worker.on("message", (message: ThreadMessage) => {
            switch (message.type) {
              case "ready":
                current.ready = true
                loadError = undefined
                Deferred.doneUnsafe(loaded, Effect.succeed(message))
                break
              case "failed":
                loadError = message.message
                settleAll(
                  [...queries.splice(0), ...documents.splice(0)],
                  new Error(`the local embedding model did not load: ${message.message}`)
                )
                break
              case "vectors": {
                const jobs = current.busy ?? []
                current.busy = undefined
                jobs.forEach((job, i) =>
                  job.settle?.(message.data.slice(i * message.dimensions, (i + 1) * message.dimensions))
                )
                break
              }
              case "error": {
                const jobs = current.busy ?? []
                current.busy = undefined
                settleAll(jobs, new Error(message.message))
                break
              }
            }
            dispatch()
          })
          worker.on("error", (error) => {
            loadError = String(error)
          })
          worker.on("exit", () => {
            settleAll(current.busy ?? [], new Error("the embedding thread stopped"))
            current.busy = undefined
            current.ready = false
            if (!closing) setTimeout(() => closing || start(current), RESTART_DELAY_MS).unref()
          })
          // The model libraries' own output is not the gateway's log.
          worker.stdout.resume()
          worker.stderr.resume()
          return current
        }

        // The threads start with the first text to embed: a gateway whose profiles have no memories
        // (or that only passes requests through) never holds the model in memory.
        yield* Metric.update(embeddingThreads, 0)
        const startThreads = Effect.suspend(() => {
          if (threads.length > 0 || closing) return Effect.void
          for (let i = 0; i < settings.threads; i++) threads.push(start())
          return Metric.update(embeddingThreads, threads.length)
        })
        yield* Effect.addFinalizer(() =>
          Effect.promise(() => {
            closing = true
            settleAll([...queries.splice(0), ...documents.splice(0)], new Error("shutting down"))
            return Promise.all(threads.map((thread) => thread.worker.terminate()))
          })
        )

        const embedAll = (inputs: ReadonlyArray<string>, priority: "query" | "document") =>
          Effect.andThen(
            startThreads,
            Effect.callback<Array<Array<number>>, AiError.AiError>((resume) => {
              if (loadError !== undefined && threads.every((thread) => !thread.ready)) {
                resume(Effect.fail(failure(`the local embedding model is unavailable: ${loadError}`)))
                return
              }
              const results: Array<Array<number>> = new Array(inputs.length)
              let pending = inputs.length
              let failed = false
              const jobs = inputs.map(
                (text, i): Job => ({
                  text,
                  settle: (result) => {
                    if (failed) return
                    if (result instanceof Error) {
                      failed = true
                      resume(Effect.fail(failure(result.message)))
                      return
                    }
                    results[i] = Array.from(result)
                    if (--pending === 0) resume(Effect.succeed(results))
                  }
                })
              )
              const line = priority === "query" ? queries : documents
              line.push(...jobs)
              dispatch()
              // Interrupted (a request that stopped waiting): jobs not yet sent leave the line.
              return Effect.sync(() => {
                for (const job of jobs) {
                  job.settle = undefined
                  const at = line.indexOf(job)
                  if (at !== -1) line.splice(at, 1)
                }
              })
            })
          )

        return yield* EmbeddingModel.make({
          embedMany: ({ inputs }) =>
            Effect.flatMap(EmbeddingPriority, (priority) =>
              Effect.map(embedAll(inputs, priority), (results) => ({ results, usage: { inputTokens: undefined } }))
            )
        })
      })
    )
}
