import { useState } from "preact/hooks"
import { request, type Trait, type TraitDefinition } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { useEditorFocus } from "../../components/useEditorFocus.ts"
import { fixed, parseValue, shortWhen, valueText, when } from "../../format.ts"
import { TraitHistory } from "./TraitHistory.tsx"
import { TraitValueField } from "./TraitValueField.tsx"
import { traitPath } from "./traitPath.ts"

/**
 * One trait, one line: key, value, type, category, source, confidence, last change. Edit opens its
 * editor in a row beneath it (a select for an enum trait); History lists its changes the same way.
 */
export const TraitRow = (props: {
  readonly profileId: string
  readonly trait: Trait
  readonly definition: TraitDefinition | undefined
  readonly columns: number
  readonly onChanged: () => Promise<void>
}) => {
  const { profileId, trait, definition, columns, onChanged } = props
  const [editing, setEditing] = useState(false)
  const [text, setText] = useState(valueText(trait.value))
  const [error, setError] = useState<string | null>(null)
  const [showHistory, setShowHistory] = useState(false)
  const { editButton, editor } = useEditorFocus(editing)
  const inputId = `trait-${trait.key}`
  const editorId = `trait-editor-${trait.key}`
  const historyId = `trait-history-${trait.key}`
  const open = () => {
    setText(valueText(trait.value))
    setError(null)
    setEditing(true)
  }
  const close = () => {
    setEditing(false)
    setError(null)
  }
  const save = async (event: Event) => {
    event.preventDefault()
    const parsed = parseValue(text, trait.valueType)
    if ("error" in parsed) return setError(parsed.error)
    try {
      await request("PUT", traitPath(profileId, trait.key), { value: parsed.value })
      // The list redrawn first, so focus goes back to the Edit button with the new value beside it.
      await onChanged()
      close()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const remove = async () => {
    if (!confirm(`Delete the trait ${trait.key}?`)) return
    try {
      await request("DELETE", traitPath(profileId, trait.key))
      await onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  return (
    <>
      <tr class={editing ? "editing" : undefined} data-trait={trait.key}>
        <th scope="row" class="key">
          {trait.key}
        </th>
        <td class="line value">{valueText(trait.value)}</td>
        <td>{trait.valueType}</td>
        <td>{trait.category}</td>
        <td>{trait.source}</td>
        <td class="number">{fixed(trait.confidence)}</td>
        <td>
          <time dateTime={trait.updatedAt} title={when(trait.updatedAt)}>
            {shortWhen(trait.updatedAt)}
          </time>
        </td>
        <td>
          <div class="actions">
            <button
              type="button"
              ref={editButton}
              aria-label={`Edit ${trait.key}`}
              aria-expanded={editing}
              {...(editing ? { "aria-controls": editorId } : {})}
              onClick={() => (editing ? close() : open())}
            >
              Edit
            </button>
            <button type="button" class="danger" onClick={remove} aria-label={`Delete ${trait.key}`}>
              Delete
            </button>
            <button
              type="button"
              aria-label={`History of ${trait.key}`}
              aria-expanded={showHistory}
              {...(showHistory ? { "aria-controls": historyId } : {})}
              onClick={() => setShowHistory(!showHistory)}
            >
              History
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
              class="row"
              aria-label={`Edit ${trait.key}`}
              onSubmit={save}
              onKeyDown={(e) => e.key === "Escape" && close()}
            >
              <label for={inputId}>
                Value ({trait.valueType})
                <TraitValueField
                  id={inputId}
                  valueType={trait.valueType}
                  definition={definition}
                  text={text}
                  onText={setText}
                  invalid={error !== null}
                  describedBy={`${inputId}-error`}
                />
              </label>
              <button type="submit">Save</button>
              <button type="button" onClick={close}>
                Cancel
              </button>
              <div id={`${inputId}-error`} class="grow">
                <ErrorNote error={error} />
                {definition !== undefined && definition.description !== "" && (
                  <p class="muted">{definition.description}</p>
                )}
              </div>
            </form>
          </td>
        </tr>
      )}
      {showHistory && (
        <tr class="editor" id={historyId}>
          <td colSpan={columns}>
            <TraitHistory profileId={profileId} traitKey={trait.key} />
          </td>
        </tr>
      )}
    </>
  )
}
