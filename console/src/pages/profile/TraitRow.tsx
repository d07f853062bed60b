import { useState } from "preact/hooks"
import { request, type Trait, type TraitDefinition } from "../../api.ts"
import {
  DeleteButton,
  EditButton,
  EditorRow,
  RowBeneath,
  SaveCancel,
  useRowEditor
} from "../../components/RowEditor.tsx"
import { ErrorNote } from "../../components/Status.tsx"
import { Time } from "../../components/Time.tsx"
import { fixed, parseValue, valueText } from "../../format.ts"
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
  const [text, setText] = useState(valueText(trait.value))
  const [showHistory, setShowHistory] = useState(false)
  const path = traitPath(profileId, trait.key)
  const editor = useRowEditor({
    id: `trait-editor-${trait.key}`,
    path,
    onOpen: () => setText(valueText(trait.value)),
    onChanged
  })
  const inputId = `trait-${trait.key}`
  const historyId = `trait-history-${trait.key}`
  const save = editor.save(async () => {
    const parsed = parseValue(text, trait.valueType)
    if ("error" in parsed) throw new Error(parsed.error)
    await request("PUT", path, { value: parsed.value })
  })
  return (
    <>
      <tr class={editor.editing ? "editing" : undefined} data-trait={trait.key}>
        <th scope="row" class="key">
          {trait.key}
        </th>
        <td class="line value">{valueText(trait.value)}</td>
        <td>{trait.valueType}</td>
        <td>{trait.category}</td>
        <td>{trait.source}</td>
        <td class="number">{fixed(trait.confidence)}</td>
        <td>
          <Time iso={trait.updatedAt} />
        </td>
        <td>
          <div class="actions">
            <EditButton editor={editor} label={`Edit ${trait.key}`} />
            <DeleteButton editor={editor} label={`Delete ${trait.key}`} question={`Delete the trait ${trait.key}?`} />
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
          {!editor.editing && <ErrorNote error={editor.error} />}
        </td>
      </tr>
      <EditorRow editor={editor} columns={columns} class="row" label={`Edit ${trait.key}`} onSubmit={save}>
        <label for={inputId}>
          Value ({trait.valueType})
          <TraitValueField
            id={inputId}
            valueType={trait.valueType}
            definition={definition}
            text={text}
            onText={setText}
            invalid={editor.error !== null}
            describedBy={`${inputId}-error`}
          />
        </label>
        <SaveCancel editor={editor} />
        <div id={`${inputId}-error`} class="grow">
          <ErrorNote error={editor.error} />
          {definition !== undefined && definition.description !== "" && <p class="muted">{definition.description}</p>}
        </div>
      </EditorRow>
      {showHistory && (
        <RowBeneath id={historyId} columns={columns}>
          <TraitHistory profileId={profileId} traitKey={trait.key} />
        </RowBeneath>
      )}
    </>
  )
}
