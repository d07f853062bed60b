/**
 * A short-lived worker that builds the local model's ONNX graph from the package's weight files and
 * keeps it in the first cache directory that takes it, then ends: what the build reads and allocates
 * (the weights, the graph twice over, about 100 MiB) goes with its thread instead of waiting in the
 * model thread's heap for a collection. Answers `{ file }`, or `{ bytes }` when no directory took
 * the graph, or `{ error }`.
 */
import { parentPort, workerData } from "node:worker_threads"
import { writeCachedGraph } from "./localModelCache.ts"
import { onnxModelOf, readGraphWeights } from "./localModelOnnx.ts"

/** What the builder is started with. */
export interface GraphBuild {
  readonly modelDirectory: string
  readonly cacheDirectories: ReadonlyArray<string>
  /** The cached file's name up to its hash (`graphFilePrefix`). */
  readonly prefix: string
}

export type GraphBuilt = { readonly file: string } | { readonly bytes: Uint8Array } | { readonly error: string }

const port = parentPort!
const build = workerData as GraphBuild

try {
  const bytes = onnxModelOf(await readGraphWeights(build.modelDirectory))
  const file = await writeCachedGraph(build.cacheDirectories, build.prefix, bytes)
  if (file !== undefined) port.postMessage({ file } satisfies GraphBuilt)
  else port.postMessage({ bytes } satisfies GraphBuilt)
} catch (error) {
  port.postMessage({ error: String(error) } satisfies GraphBuilt)
}
