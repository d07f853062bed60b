import { useState } from "preact/hooks"
import { type Profile, profilePath, request, type SummaryVersion } from "../../api.ts"
import { Show } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { wordDiff } from "../../diff.ts"
import { when } from "../../format.ts"

/** The summary, its versions, and what changed between two of them. */
export const SummarySection = ({ profile }: { readonly profile: Profile }) => {
  const [history] = useLoad(
    () => request<{ history: ReadonlyArray<SummaryVersion> }>("GET", `${profilePath(profile.id)}/summary/history`),
    [profile.id, profile.summaryVersion]
  )
  return (
    <>
      <h2>
        Summary <span class="muted">version {profile.summaryVersion}</span>
      </h2>
      <p class="summary">{profile.summary ?? <span class="muted">No summary yet.</span>}</p>
      <Show loaded={history}>{({ history }) => <Versions history={history} />}</Show>
    </>
  )
}

const Versions = ({ history }: { readonly history: ReadonlyArray<SummaryVersion> }) => {
  const [newer, setNewer] = useState(history[0]?.version ?? 0)
  const [older, setOlder] = useState(history[1]?.version ?? history[0]?.version ?? 0)
  if (history.length === 0) return <p class="muted">No versions yet.</p>
  const text = (version: number) => history.find((entry) => entry.version === version)?.summary ?? ""
  const option = (entry: SummaryVersion) => (
    <option value={entry.version}>
      v{entry.version} · {entry.source} · {when(entry.createdAt)}
    </option>
  )
  return (
    <>
      <h3>Versions</h3>
      <div class="row">
        <label>
          From{" "}
          <select value={older} onChange={(e) => setOlder(Number(e.currentTarget.value))}>
            {history.map(option)}
          </select>
        </label>
        <label>
          to{" "}
          <select value={newer} onChange={(e) => setNewer(Number(e.currentTarget.value))}>
            {history.map(option)}
          </select>
        </label>
      </div>
      <figure class="diff" aria-label={`Changes from version ${older} to ${newer}`}>
        {wordDiff(text(older), text(newer)).map((piece) =>
          piece.kind === "added" ? (
            <ins>{piece.text}</ins>
          ) : piece.kind === "removed" ? (
            <del>{piece.text}</del>
          ) : (
            piece.text
          )
        )}
      </figure>
    </>
  )
}
