import { PerformanceObserver } from "node:perf_hooks"
import { Effect, Metric, type Scope } from "effect"

/**
 * The process's own health under the names Prometheus' Node.js clients use, so existing dashboards
 * and alerts apply: memory, heap, CPU time and garbage collections.
 */
const residentMemory = Metric.gauge("process_resident_memory_bytes", { description: "Resident memory size in bytes" })
const heapTotal = Metric.gauge("nodejs_heap_size_total_bytes", { description: "V8 heap size in bytes" })
const heapUsed = Metric.gauge("nodejs_heap_size_used_bytes", { description: "V8 heap in use, in bytes" })
const externalMemory = Metric.gauge("nodejs_external_memory_bytes", {
  description: "Memory of C++ objects bound to JavaScript objects (buffers), in bytes"
})
const cpuUser = Metric.counter("process_cpu_user_seconds_total", {
  description: "User CPU time spent, in seconds",
  incremental: true
})
const cpuSystem = Metric.counter("process_cpu_system_seconds_total", {
  description: "System CPU time spent, in seconds",
  incremental: true
})
const startTime = Metric.gauge("process_start_time_seconds", {
  description: "When the process started, in seconds since the Unix epoch"
})
const gcDuration = Metric.histogram("nodejs_gc_duration_seconds", {
  description: "Garbage collections by kind (minor, major, incremental, weakcb) and how long each took",
  boundaries: [0.001, 0.01, 0.1, 1, 2, 5]
})

const GC_KINDS: Readonly<Record<number, string>> = { 1: "minor", 2: "major", 4: "incremental", 8: "weakcb" }

/**
 * Starts counting garbage collections for the life of the scope, and gives the effect that brings
 * the other readings up to date (at each scrape).
 */
export const makeProcessMetrics: Effect.Effect<Effect.Effect<void>, never, Scope.Scope> = Effect.gen(function* () {
  const byKind = new Map<string, Metric.Metric<number, unknown>>()
  const seriesOf = (kind: string) => {
    let series = byKind.get(kind)
    if (series === undefined) {
      series = Metric.withAttributes(gcDuration, { kind })
      byKind.set(kind, series)
    }
    return series
  }
  // Each known kind's series, empty, before its first collection (reading one registers it).
  for (const kind of Object.values(GC_KINDS)) yield* Metric.value(seriesOf(kind))
  const pending: Array<{ readonly kind: string; readonly seconds: number }> = []
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          // A gc entry's detail names its kind (Node's NODE_PERFORMANCE_GC_* flags).
          const detail = (entry as PerformanceEntry & { readonly detail?: { readonly kind?: number } }).detail
          const kind = GC_KINDS[detail?.kind ?? 0] ?? "other"
          pending.push({ kind, seconds: entry.duration / 1000 })
        }
      })
      observer.observe({ entryTypes: ["gc"] })
      return observer
    }),
    (observer) => Effect.sync(() => observer.disconnect())
  )
  // The counters count from the process's start, as their names say (not from this layer's): each
  // reading adds what was spent since the one before, starting from none.
  let cpuCounted = { user: 0, system: 0 }
  const started = Date.now() / 1000 - process.uptime()

  return Effect.gen(function* () {
    const memory = process.memoryUsage()
    yield* Metric.update(residentMemory, memory.rss)
    yield* Metric.update(heapTotal, memory.heapTotal)
    yield* Metric.update(heapUsed, memory.heapUsed)
    yield* Metric.update(externalMemory, memory.external)
    const cpu = process.cpuUsage()
    yield* Metric.update(cpuUser, (cpu.user - cpuCounted.user) / 1e6)
    yield* Metric.update(cpuSystem, (cpu.system - cpuCounted.system) / 1e6)
    cpuCounted = cpu
    yield* Metric.update(startTime, started)
    for (const { kind, seconds } of pending.splice(0)) yield* Metric.update(seriesOf(kind), seconds)
  })
})
