import { Config, Context, Option, Redacted, Result, Schema } from "effect"
import { commaList, flag, optionalString, optionalUrl, positiveInt, section } from "../config/values.ts"

export const OtlpProtocol = Schema.Literals(["http/protobuf", "http/json"])
export type OtlpProtocol = typeof OtlpProtocol.Type

/** `a=b,c=d`, each side percent-decoded: the list format of `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`. */
const parseKeyValueList = (list: string): Record<string, string> | undefined => {
  const entries: Array<[string, string]> = []
  for (const item of list.split(",")) {
    if (item.trim() === "") continue
    const at = item.indexOf("=")
    if (at <= 0) return undefined
    const key = Result.try(() => decodeURIComponent(item.slice(0, at).trim()))
    const value = Result.try(() => decodeURIComponent(item.slice(at + 1).trim()))
    if (Result.isFailure(key) || Result.isFailure(value) || key.success === "") return undefined
    entries.push([key.success, value.success])
  }
  return Object.fromEntries(entries)
}

// The message never repeats the value: header values are usually keys.
const KeyValueList = Schema.String.check(
  Schema.makeFilter((s) => parseKeyValueList(s) !== undefined, {
    expected: "comma-separated name=value pairs (percent-encoded)"
  })
)

const keyValueList = (name: string) =>
  Config.schema(KeyValueList, name).pipe(
    Config.withDefault(""),
    Config.map((list) => parseKeyValueList(list) ?? {})
  )

/** The signal's own variable (`OTEL_EXPORTER_OTLP_TRACES_…`) over the shared one (`OTEL_EXPORTER_OTLP_…`). */
const otlpOption = <A>(make: (name: string) => Config.Config<A>, suffix: string) =>
  Config.all([
    Config.option(make(`OTEL_EXPORTER_OTLP_TRACES_${suffix}`)),
    Config.option(make(`OTEL_EXPORTER_OTLP_${suffix}`))
  ]).pipe(Config.map(([traces, shared]) => Option.orElse(traces, () => shared)))

/** Where and how spans are exported, read only while export is on. `url`: where they go. */
const exportSettings = (url: string) =>
  section({
    headers: keyValueList("OTEL_EXPORTER_OTLP_HEADERS"),
    tracesHeaders: keyValueList("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
    protocol: otlpOption((name) => Config.schema(OtlpProtocol, name), "PROTOCOL"),
    compression: otlpOption((name) => Config.Literals(["gzip", "none"], name), "COMPRESSION"),
    serviceName: optionalString("OTEL_SERVICE_NAME"),
    resourceAttributes: keyValueList("OTEL_RESOURCE_ATTRIBUTES"),
    scheduleDelayMs: positiveInt("OTEL_BSP_SCHEDULE_DELAY", 5000)
  }).pipe(
    Config.map(
      (t) =>
        ({
          /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
          url,
          /** `OTEL_EXPORTER_OTLP_HEADERS`, overridden per name by `OTEL_EXPORTER_OTLP_TRACES_HEADERS`: often a vendor's key. */
          headers: Redacted.make<Readonly<Record<string, string>>>({ ...t.headers, ...t.tracesHeaders }),
          // OpenTelemetry's default; every collector and vendor endpoint takes both.
          protocol: Option.getOrElse(t.protocol, (): OtlpProtocol => "http/protobuf"),
          compression: Option.getOrElse(t.compression, () => "none" as const),
          /** `OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else `profile-memory-gateway`. */
          serviceName: Option.getOrElse(
            t.serviceName,
            () => t.resourceAttributes["service.name"] ?? "profile-memory-gateway"
          ),
          /** `OTEL_RESOURCE_ATTRIBUTES` (`deployment.environment=prod,...`), on every exported span. */
          resourceAttributes: t.resourceAttributes as Readonly<Record<string, string>>,
          /** `OTEL_BSP_SCHEDULE_DELAY`: how long finished spans wait to be sent together. */
          scheduleDelayMs: t.scheduleDelayMs
        }) as const
    )
  )

/**
 * Span export over OTLP/HTTP, from OpenTelemetry's own variables; `None`: no span leaves the process.
 * On as soon as an OTLP endpoint is set (and neither `OTEL_SDK_DISABLED=true` nor an
 * `OTEL_TRACES_EXPORTER` without `otlp` turns it off). The other variables are only read then, so
 * an `OTEL_*` environment meant for other services cannot stop a gateway that exports nothing.
 */
export const tracingFromEnv = section({
  disabled: flag("OTEL_SDK_DISABLED", false),
  // Unset: OpenTelemetry's default exporter.
  exporters: commaList("OTEL_TRACES_EXPORTER").pipe(
    Config.map((items) => (items.length === 0 ? ["otlp"] : items.map((item) => item.toLowerCase())))
  ),
  tracesEndpoint: optionalUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  endpoint: optionalUrl("OTEL_EXPORTER_OTLP_ENDPOINT")
}).pipe(
  Config.flatMap((c) => {
    const url = Option.orElse(c.tracesEndpoint, () =>
      Option.map(c.endpoint, (base) => `${base.replace(/\/+$/, "")}/v1/traces`)
    )
    return c.disabled || !c.exporters.includes("otlp") || Option.isNone(url)
      ? Config.succeed(Option.none())
      : exportSettings(url.value).pipe(Config.map(Option.some))
  })
)

export type TracingSettings = Option.Option.Value<Config.Success<typeof tracingFromEnv>>

/** The export settings, or `None` when no span leaves the process. */
export class TracingConfig extends Context.Service<TracingConfig, Option.Option<TracingSettings>>()(
  "gateway/observability/TracingConfig"
) {}
