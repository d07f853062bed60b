import { ConfigProvider, Layer } from "effect"
import { AppConfig } from "../app/AppConfig.ts"
import { DEFAULT_NAMESPACE, inNamespace } from "../domain/Namespace.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { SnapshotStore } from "../snapshots/SnapshotStore.ts"
import { UpstreamHttp } from "../upstream/UpstreamHttp.ts"

/**
 * What the profile, trait and memory services need besides the database, for their test layers:
 * the configuration's defaults (not the process environment) with embeddings off, and the real
 * context cache (their changes must drop what it holds), acting in the `default` namespace. Needs
 * only a `PgClient`.
 */
export const SliceTestServices = SnapshotCache.layer.pipe(
  Layer.provide(SnapshotStore.layer),
  Layer.provideMerge(Embedder.layer),
  Layer.provide(UpstreamHttp.layer),
  Layer.provideMerge(AppConfig.layer),
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ EMBEDDINGS: "off" }))),
  Layer.provideMerge(inNamespace(DEFAULT_NAMESPACE))
)
