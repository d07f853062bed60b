import { useRef, useState } from "preact/hooks"
import { type Memory, request } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { type MemoryDraft, MemoryFields, memoryPayload } from "./MemoryFields.tsx"

const EMPTY: MemoryDraft = { content: "", type: "fact", importance: "0.5", tags: "" }

/**
 * "Add memory": a form opened from its button (`POST …/memories`). It stays open after adding, for
 * the next one; the gateway embeds the memory and writes its cues in the background.
 */
export const AddMemory = (props: { readonly base: string; readonly onAdded: () => Promise<void> }) => {
  const { base, onAdded } = props
  const [open, setOpen] = useState(false)
  const [draft, setDraft] = useState(EMPTY)
  const [error, setError] = useState<string | null>(null)
  const [added, setAdded] = useState("")
  const opener = useRef<HTMLButtonElement>(null)
  const form = useRef<HTMLFormElement>(null)
  const focusContent = () => form.current?.querySelector("textarea")?.focus()
  const add = async (event: Event) => {
    event.preventDefault()
    try {
      const { memory } = await request<{ memory: Memory }>("POST", base, memoryPayload(draft))
      await onAdded()
      setDraft(EMPTY)
      setError(null)
      setAdded(`Added “${memory.content.slice(0, 80)}”.`)
      focusContent()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const close = () => {
    setOpen(false)
    setError(null)
    setAdded("")
    // Back to the button that opened it, once it is drawn again.
    requestAnimationFrame(() => opener.current?.focus())
  }
  if (!open)
    return (
      <button
        type="button"
        ref={opener}
        aria-expanded={false}
        onClick={() => {
          setOpen(true)
          requestAnimationFrame(focusContent)
        }}
      >
        Add memory
      </button>
    )
  return (
    <form
      ref={form}
      class="panel"
      aria-labelledby="add-memory-title"
      onSubmit={add}
      onKeyDown={(e) => e.key === "Escape" && close()}
    >
      <h3 id="add-memory-title">Add a memory</h3>
      <MemoryFields id="new-memory" draft={draft} onDraft={setDraft} />
      <ErrorNote error={error} />
      <div class="actions">
        <button type="submit">Add</button>
        <button type="button" onClick={close}>
          Close
        </button>
      </div>
      <p role="status" class="muted">
        {added}
      </p>
    </form>
  )
}
