import { Time } from "../../components/Time.tsx"
import { ago, count, when } from "../../format.ts"
import type { NamespaceSettings } from "./settingsForm.ts"

const plural = (n: number, one: string, many: string) => `${count(n)} ${n === 1 ? one : many}`

/** When the settings were last saved (or that they are the defaults), and what the latest retention sweep removed. */
export const SettingsStatus = ({ settings }: { readonly settings: NamespaceSettings }) => {
  const { updatedAt, lastSweep } = settings
  return (
    <dl class="settings-status">
      <div>
        <dt>Saved</dt>
        <dd data-updated-at>{updatedAt === null ? "Never: the defaults" : <Time iso={updatedAt} text={when} />}</dd>
      </div>
      <div>
        <dt>Last retention sweep</dt>
        <dd data-last-sweep>
          {lastSweep === null ? (
            "None has removed anything yet"
          ) : (
            <>
              Removed {plural(lastSweep.memories, "memory", "memories")}, {plural(lastSweep.turns, "turn", "turns")} and{" "}
              {plural(lastSweep.responses, "stored response", "stored responses")},{" "}
              <Time iso={lastSweep.at} text={ago} />
            </>
          )}
        </dd>
      </div>
    </dl>
  )
}
