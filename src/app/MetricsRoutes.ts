import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { GatewayMetrics } from "./GatewayMetrics.ts"
import { METRICS_PATH } from "./metricsPath.ts"

/** `GET /metrics`: every metric in the Prometheus text format. */
export const MetricsRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const metrics = yield* GatewayMetrics
    yield* router.add(
      "GET",
      METRICS_PATH,
      // A scrape, untraced (HttpServerLive.ts): the queue's counts it reads leave no span either.
      Effect.map(metrics.exposition, (text) =>
        HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
      ).pipe(Effect.withTracerEnabled(false))
    )
  })
)
