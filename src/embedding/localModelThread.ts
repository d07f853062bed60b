/**
 * The worker thread that runs the local embedding model: it loads the model once (on ONNX Runtime,
 * its graph kept on disk after the first build, or on TensorFlow.js where that cannot load), then
 * answers `{ id, texts }` with `{ id, data, dimensions }` (one flat Float32Array, transferred).
 * Inference runs here, never on the gateway's event loop. `workerData`: `LocalModelThreadData`.
 */
import { parentPort, workerData } from "node:worker_threads"
import {
  type LocalModelThreadData,
  loadLocalModel,
  localModelCacheDirectories,
  tensorflowJsLoaded
} from "./localModel.ts"

interface EmbedRequest {
  readonly id: number
  readonly texts: ReadonlyArray<string>
}

const port = parentPort!
// The model libraries log to the console; the gateway logs for itself.
for (const method of ["log", "info", "warn", "debug"] as const) console[method] = () => {}

try {
  const started = performance.now()
  const data = (workerData ?? {}) as LocalModelThreadData
  const model = await loadLocalModel({
    cacheDirectories: data.cacheDirectories ?? (await localModelCacheDirectories(data.dataDir))
  })
  // The first inference compiles and allocates (80–250 ms here): pay it before the first request does.
  await model.embed(["Warming up the model."])
  port.postMessage({
    type: "ready",
    dimensions: model.dimensions,
    runtime: model.runtime,
    fallbackReason: model.fallbackReason,
    graph: model.graph,
    tensorflowJs: tensorflowJsLoaded(),
    loadMs: Math.round(performance.now() - started)
  })
  port.on("message", (request: EmbedRequest) => {
    model.embed(request.texts).then(
      (data) =>
        port.postMessage({ type: "vectors", id: request.id, data, dimensions: model.dimensions }, [data.buffer]),
      (error: unknown) => port.postMessage({ type: "error", id: request.id, message: String(error) })
    )
  })
} catch (error) {
  port.postMessage({ type: "failed", message: String(error) })
}
