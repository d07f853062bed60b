import { useState } from "preact/hooks"
import { profilePath, request, type Turn } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { when } from "../../format.ts"

const PAGE = 30

/** The latest recorded messages, newest first, older ones on demand. */
export const TurnsSection = ({ profileId }: { readonly profileId: string }) => {
  const [older, setOlder] = useState<ReadonlyArray<Turn>>([])
  const [error, setError] = useState<Error | null>(null)
  const [latest] = useLoad(
    () => request<{ messages: ReadonlyArray<Turn> }>("GET", `${profilePath(profileId)}/messages?limit=${PAGE}`),
    [profileId]
  )
  const shown = latest.state === "ready" ? [...latest.value.messages, ...older] : []
  const loadOlder = async () => {
    const last = shown.at(-1)
    if (last === undefined) return
    try {
      const { messages } = await request<{ messages: ReadonlyArray<Turn> }>(
        "GET",
        `${profilePath(profileId)}/messages?limit=${PAGE}&before=${encodeURIComponent(last.id)}`
      )
      setOlder([...older, ...messages])
    } catch (failure) {
      setError(failure as Error)
    }
  }
  return (
    <>
      <h2>Recent turns</h2>
      {latest.state === "loading" && <p class="muted">Loading…</p>}
      <ErrorNote error={latest.state === "failed" ? latest.error : error} />
      {latest.state === "ready" && shown.length === 0 && <p class="muted">No recorded messages yet.</p>}
      <ol class="turns">
        {shown.map((turn) => (
          <li key={turn.id} class={`turn ${turn.role}`}>
            <p class="muted">
              {turn.role} · {when(turn.createdAt)}
              {turn.toolCalls === null ? "" : " · with tool calls"}
            </p>
            <p class="content">{turn.content}</p>
          </li>
        ))}
      </ol>
      {shown.length > 0 && shown.length % PAGE === 0 && (
        <button type="button" onClick={loadOlder}>
          Older
        </button>
      )}
    </>
  )
}
