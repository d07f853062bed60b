import { useState } from "preact/hooks"
import { type Memory, type RankedMemory, request } from "../../api.ts"
import { DeleteButton, EditButton, EditorRow, SaveCancel, useRowEditor } from "../../components/RowEditor.tsx"
import { ErrorNote } from "../../components/Status.tsx"
import { Time } from "../../components/Time.tsx"
import { ago, fixed, when } from "../../format.ts"
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
  const [draft, setDraft] = useState(() => draftOf(memory))
  const path = `${base}/${encodeURIComponent(memory.id)}`
  const editor = useRowEditor({
    id: `memory-editor-${memory.id}`,
    path,
    onOpen: () => setDraft(draftOf(memory)),
    onChanged
  })
  const name = shortText(memory.content)
  const ranked = "score" in memory ? memory : undefined
  const superseded = memory.supersededBy !== null
  return (
    <>
      <tr
        class={[superseded ? "superseded" : "", editor.editing ? "editing" : ""].join(" ").trim() || undefined}
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
          <Time iso={memory.createdAt} />
        </td>
        <td>{ago(memory.lastAccessedAt)}</td>
        {ranked !== undefined && (
          <td class="number">
            {fixed(ranked.score, 3)}
            {ranked.injected ? (
              <span class="badge">injected</span>
            ) : (
              ranked.relevant && <span class="badge">relevant</span>
            )}
          </td>
        )}
        <td>
          <div class="actions">
            <EditButton editor={editor} label={`Edit memory ${name}`} />
            <DeleteButton
              editor={editor}
              label={`Delete memory ${name}`}
              question={`Delete the memory “${memory.content.slice(0, 80)}”?`}
            />
          </div>
          {!editor.editing && <ErrorNote error={editor.error} />}
        </td>
      </tr>
      <EditorRow
        editor={editor}
        columns={columns}
        label={`Edit memory ${name}`}
        onSubmit={editor.save(() => request("PATCH", path, memoryPayload(draft)))}
      >
        <MemoryFields id={editor.id} draft={draft} onDraft={setDraft} />
        <p class="muted">
          Cues: {memory.cues.length === 0 ? "none yet" : memory.cues.join(", ")}
          {memory.occurredAt === null ? "" : ` · happened ${when(memory.occurredAt)}`} · created{" "}
          {when(memory.createdAt)}
        </p>
        <ErrorNote error={editor.error} />
        <div class="actions">
          <SaveCancel editor={editor} />
        </div>
      </EditorRow>
    </>
  )
}
