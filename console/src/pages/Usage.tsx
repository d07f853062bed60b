import { useState } from "preact/hooks"
import type { ApiKey } from "../api.ts"
import { ErrorNote } from "../components/Status.tsx"
import { useLoad } from "../components/useLoad.ts"
import { loadUsage } from "./usage/report.ts"
import { UsageCharts, UsageTotals } from "./usage/UsageCharts.tsx"
import { TopTable, WorkTable } from "./usage/UsageTables.tsx"

const PERIODS: ReadonlyArray<readonly [number, string]> = [
  [7, "Last 7 days"],
  [30, "Last 30 days"],
  [90, "Last 90 days"]
]

/** A key's row named as a person tells keys apart; `null` is the environment's keys (and memory work without a key). */
const keyName = (keys: ReadonlyMap<string, ApiKey>) => (id: string | null) => {
  if (id === null) return "Environment keys"
  const key = keys.get(id)
  return key === undefined ? id : `${key.prefix}…${key.label === null ? "" : ` (${key.label})`}`
}

/**
 * The tokens the namespace's traffic and the gateway's memory work took over the last days (UTC): the
 * totals, each day's tokens, the app's traffic beside the memory work, and the keys, users and models
 * that used the most. Rows are written up to a fraction of a second after each answer.
 */
export const Usage = () => {
  const [days, setDays] = useState(30)
  const [usage, reload] = useLoad(() => loadUsage(days), [days])
  const ready = usage.state === "ready" && usage.value.days === days ? usage.value : null
  return (
    <main>
      <div class="row spread">
        <h1>Usage</h1>
        <div class="row">
          <label>
            Period
            <select value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
              {PERIODS.map(([value, label]) => (
                <option value={value}>{label}</option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => void reload()}>
            Refresh
          </button>
        </div>
      </div>
      {usage.state === "failed" ? (
        <ErrorNote error={usage.error} />
      ) : ready === null ? (
        <p class="muted" aria-live="polite">
          Loading…
        </p>
      ) : (
        <>
          <p class="muted">
            From {ready.period.from} to {ready.period.to} (UTC days). Input includes the cached tokens and the memory
            injected; memory work is the gateway's own calls (extraction, summaries, cues, embeddings).
          </p>
          <UsageTotals rows={ready.byWork} />
          <UsageCharts period={ready.period} byDay={ready.byDay} />
          <WorkTable rows={ready.byWork} />
          <TopTable title="Top keys" column="Key" rows={ready.byKey} name={keyName(ready.keys)} />
          <TopTable title="Top users" column="User" rows={ready.byUser} name={(user) => user ?? "No user id"} />
          <TopTable title="Top models" column="Model" rows={ready.byModel} name={(model) => model ?? "—"} />
        </>
      )}
    </main>
  )
}
