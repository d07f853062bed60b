import { request, type TraitChange } from "../../api.ts"
import { Show } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { fixed, valueText, when } from "../../format.ts"
import { traitPath } from "./traitPath.ts"

/** Every change of a trait's value, newest first. */
export const TraitHistory = ({ profileId, traitKey }: { readonly profileId: string; readonly traitKey: string }) => {
  const [history] = useLoad(
    () => request<{ history: ReadonlyArray<TraitChange> }>("GET", `${traitPath(profileId, traitKey)}/history`),
    [profileId, traitKey]
  )
  return (
    <Show loaded={history}>
      {({ history }) => (
        <ol class="history" aria-label={`History of ${traitKey}`}>
          {history.map((change) => (
            <li>
              {when(change.createdAt)} · {change.source}: {change.oldValue === null ? "—" : valueText(change.oldValue)}{" "}
              → {change.newValue === null ? "deleted" : valueText(change.newValue)}
              {change.confidence === null ? "" : ` (confidence ${fixed(change.confidence)})`}
            </li>
          ))}
        </ol>
      )}
    </Show>
  )
}
