import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A stand-in for an OpenTelemetry collector on loopback: it records every export it receives
 * (OTLP/HTTP) and answers with `status` (200 by default). JSON exports are unpacked into spans.
 */
export interface ReceivedExport {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  /** When it started, in nanoseconds since the epoch (the exporting process's clock). */
  readonly startTimeUnixNano: string
  readonly attributes: Readonly<Record<string, unknown>>
  /** The attributes of the resource (the exporting service) the span came with. */
  readonly resource: Readonly<Record<string, unknown>>
}

export interface FakeCollector {
  /** Base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly url: string
  readonly exports: Array<ReceivedExport>
  /** Spans of the JSON exports received so far. */
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  status: number
  readonly close: () => Promise<void>
}

interface KeyValue {
  readonly key: string
  readonly value: Readonly<Record<string, unknown>>
}

/** OTLP/JSON attributes (`[{ key, value: { stringValue } }]`) as a plain record. */
const attributesOf = (list: ReadonlyArray<KeyValue> | undefined) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, Object.values(value)[0]]))

interface TracesData {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<KeyValue> }
    readonly scopeSpans: ReadonlyArray<{
      readonly spans: ReadonlyArray<
        Omit<ReceivedSpan, "attributes" | "resource"> & { readonly attributes?: ReadonlyArray<KeyValue> }
      >
    }>
  }>
}

const spansOf = (received: ReceivedExport): Array<ReceivedSpan> => {
  if (!String(received.headers["content-type"]).startsWith("application/json")) return []
  const data = JSON.parse(received.body.toString("utf8")) as TracesData
  return data.resourceSpans.flatMap(({ resource, scopeSpans }) =>
    scopeSpans.flatMap(({ spans }) =>
      spans.map((span) => ({
        ...span,
        attributes: attributesOf(span.attributes),
        resource: attributesOf(resource?.attributes)
      }))
    )
  )
}

export const startFakeCollector = async (): Promise<FakeCollector> => {
  const exports: Array<ReceivedExport> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      exports.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(collector.status, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const collector: FakeCollector = {
    url: `http://127.0.0.1:${port}`,
    exports,
    spans: () => exports.flatMap(spansOf),
    status: 200,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return collector
}
