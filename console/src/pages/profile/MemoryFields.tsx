import { MEMORY_TYPES, type MemoryType } from "../../api.ts"

/** What a memory form holds while it is typed: the fields as text, as the inputs have them. */
export interface MemoryDraft {
  readonly content: string
  readonly type: MemoryType
  readonly importance: string
  /** Comma-separated. */
  readonly tags: string
}

/** The draft as the API takes it: importance a number, tags a list without blanks. */
export const memoryPayload = (draft: MemoryDraft) => ({
  content: draft.content,
  type: draft.type,
  importance: Number(draft.importance),
  tags: draft.tags
    .split(",")
    .map((tag) => tag.trim())
    .filter((tag) => tag !== "")
})

/**
 * The fields of a memory, for adding one and for editing one in its row. `id` prefixes the inputs'
 * ids, so several forms can be open on the page at once.
 */
export const MemoryFields = (props: {
  readonly id: string
  readonly draft: MemoryDraft
  readonly onDraft: (draft: MemoryDraft) => void
}) => {
  const { id, draft, onDraft } = props
  return (
    <div class="fields">
      <label for={`${id}-content`} class="wide">
        Content
        <textarea
          id={`${id}-content`}
          required
          maxLength={4000}
          rows={2}
          value={draft.content}
          onInput={(e) => onDraft({ ...draft, content: e.currentTarget.value })}
        />
      </label>
      <label for={`${id}-type`}>
        Type
        <select
          id={`${id}-type`}
          value={draft.type}
          onChange={(e) => onDraft({ ...draft, type: e.currentTarget.value as MemoryType })}
        >
          {MEMORY_TYPES.map((name) => (
            <option value={name}>{name}</option>
          ))}
        </select>
      </label>
      <label for={`${id}-importance`}>
        Importance
        <input
          id={`${id}-importance`}
          type="number"
          required
          min="0"
          max="1"
          // Any fraction: an extracted importance such as 0.37 must not block saving a new text.
          step="any"
          value={draft.importance}
          onInput={(e) => onDraft({ ...draft, importance: e.currentTarget.value })}
        />
      </label>
      <label for={`${id}-tags`}>
        Tags (comma-separated)
        <input
          id={`${id}-tags`}
          autocapitalize="off"
          spellcheck={false}
          value={draft.tags}
          onInput={(e) => onDraft({ ...draft, tags: e.currentTarget.value })}
        />
      </label>
    </div>
  )
}
