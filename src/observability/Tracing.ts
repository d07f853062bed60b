import { Duration, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { FetchHttpClient, Headers } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"
import { displayUrl } from "../config/displayUrl.ts"
import { TracingConfig, type TracingSettings } from "./TracingConfig.ts"
import { SpansExported } from "./traceContext.ts"

/**
 * A server span's name as OpenTelemetry's HTTP conventions want it, `METHOD route`
 * (`GET /api/profiles/:id`): the template of the route the router took, never the path (ids in names
 * would make each span a name of its own). Effect names the span when the request arrives, before
 * routing, after its method; the router then notes the template as `http.route`. So the name is read
 * from both when the span is exported; a request no route took (an unknown path, a refused key) keeps
 * the bare method.
 */
export const namedByRoute = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const span = tracer.span(options)
      if (options.kind !== "server") return span
      const method = options.name
      Object.defineProperty(span, "name", {
        get: () => {
          const route = span.attributes.get("http.route")
          return typeof route === "string" ? `${method} ${route}` : method
        }
      })
      return span
    },
    context: tracer.context
  })

const exporter = (settings: TracingSettings) => {
  const headers = Redacted.value(settings.headers)
  return Layer.effect(
    Tracer.Tracer,
    Effect.map(
      OtlpTracer.make({
        url: settings.url,
        resource: { serviceName: settings.serviceName, attributes: settings.resourceAttributes },
        headers,
        compression: settings.compression,
        exportInterval: Duration.millis(settings.scheduleDelayMs)
      }),
      namedByRoute
    )
  ).pipe(
    // As `OtlpTracer.layer`: the flusher drains the spans still buffered at shutdown.
    Layer.provideMerge(OtlpExporter.layerFlusher),
    Layer.provide(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer),
    // A failed export is logged (at debug) with its request: the headers, a vendor's key, show redacted.
    Layer.provide(
      Layer.effect(
        Headers.CurrentRedactedNames,
        Effect.map(Effect.service(Headers.CurrentRedactedNames), (names) => [...names, ...Object.keys(headers)])
      )
    )
  )
}

/**
 * Every span — each request's server span (continuing the caller's `traceparent`), the pipeline's
 * stages, background work — exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `…_TRACES_ENDPOINT`) is set. Otherwise nothing is installed and requests take the untraced path.
 * Spans still buffered at shutdown are sent then (for up to 3 s).
 */
export const TracingLive = Layer.unwrap(
  Effect.gen(function* () {
    const tracing = yield* TracingConfig
    if (Option.isNone(tracing)) return Layer.empty
    const settings = tracing.value
    yield* Effect.logInfo(
      `tracing: spans of ${settings.serviceName} go to ${displayUrl(settings.url)} (OTLP ${settings.protocol})`
    )
    return Layer.merge(exporter(settings), Layer.succeed(SpansExported, true))
  })
)
