import { useState } from "preact/hooks"
import { type Memory, type RankedMemory, request } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { useEditorFocus } from "../../components/useEditorFocus.ts"
import { ago, fixed, shortWhen, when } from "../../format.ts"
import { type MemoryDraft, MemoryFields, memoryPayload } from "./MemoryFields.tsx"

const draftOf = (memory: Memory): MemoryDraft => ({
  content: memory.content,
  type: memory.type,
  importance: String(memory.importance),
  tags: memory.tags.join(", ")
})

/** Names a row's buttons for screen readers, which list them out of their row: "Edit memory Allergic to…". */
const shortText = (text: string) => (text.length > 48 ? `${text.slice(0, 47)}…` : text)

/**
 * One memory, one line: its text (cut to the line; whole in the editor), type, importance, decay,
 * when it was made and last injected. Edit opens its editor in a row beneath it.
 */
export const MemoryRow = (props: {
  readonly base: string
  readonly memory: Memory | RankedMemory
  /** The columns of the table, which the editor's row spans. */
  readonly columns: number
  readonly onChanged: () => Promise<void>
}) => {
  const { base, memory, columns, onChanged } = props
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState(() => draftOf(memory))
  const [error, setError] = useState<string | null>(null)
  const { editButton, editor } = useEditorFocus(editing)
  const path = `${base}/${encodeURIComponent(memory.id)}`
  const editorId = `memory-editor-${memory.id}`
  const name = shortText(memory.content)
  const open = () => {
    setDraft(draftOf(memory))
    setError(null)
    setEditing(true)
  }
  const save = async (event: Event) => {
    event.preventDefault()
    try {
      await request("PATCH", path, memoryPayload(draft))
      // The list redrawn first, so focus goes back to the Edit button where the row now is.
      await onChanged()
      setEditing(false)
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const remove = async () => {
    if (!confirm(`Delete the memory “${memory.content.slice(0, 80)}”?`)) return
    try {
      await request("DELETE", path)
      await onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const ranked = "score" in memory ? memory : undefined
  const superseded = memory.supersededBy !== null
  return (
    <>
      <tr
        class={[superseded ? "superseded" : "", editing ? "editing" : ""].join(" ").trim() || undefined}
        data-memory={memory.id}
      >
        <td class="line">
          {superseded && <span class="badge">superseded</span>} {memory.content}
          {memory.tags.length > 0 && <span class="muted"> · {memory.tags.join(", ")}</span>}
        </td>
        <td>{memory.type}</td>
        <td class="number">{fixed(memory.importance)}</td>
        <td class="number">{fixed(memory.decayFactor)}</td>
        <td>
          <time dateTime={memory.createdAt} title={when(memory.createdAt)}>
            {shortWhen(memory.createdAt)}
          </time>
        </td>
        <td>{ago(memory.lastAccessedAt)}</td>
        {ranked !== undefined && (
          <td class="number">
            {fixed(ranked.score, 3)}
            {ranked.relevant && <span class="badge">relevant</span>}
          </td>
        )}
        <td>
          <div class="actions">
            <button
              type="button"
              ref={editButton}
              aria-label={`Edit memory ${name}`}
              aria-expanded={editing}
              {...(editing ? { "aria-controls": editorId } : {})}
              onClick={() => (editing ? setEditing(false) : open())}
            >
              Edit
            </button>
            <button type="button" class="danger" aria-label={`Delete memory ${name}`} onClick={remove}>
              Delete
            </button>
          </div>
          {!editing && <ErrorNote error={error} />}
        </td>
      </tr>
      {editing && (
        <tr class="editor" id={editorId}>
          <td colSpan={columns}>
            <form
              ref={editor}
              aria-label={`Edit memory ${name}`}
              onSubmit={save}
              onKeyDown={(e) => e.key === "Escape" && setEditing(false)}
            >
              <MemoryFields id={editorId} draft={draft} onDraft={setDraft} />
              <p class="muted">
                Cues: {memory.cues.length === 0 ? "none yet" : memory.cues.join(", ")}
                {memory.occurredAt === null ? "" : ` · happened ${when(memory.occurredAt)}`} · created{" "}
                {when(memory.createdAt)}
              </p>
              <ErrorNote error={error} />
              <div class="actions">
                <button type="submit">Save</button>
                <button type="button" onClick={() => setEditing(false)}>
                  Cancel
                </button>
              </div>
            </form>
          </td>
        </tr>
      )}
    </>
  )
}
