import { useState } from "preact/hooks"
import { request, type TraitDefinition } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { TraitValueField } from "./TraitValueField.tsx"
import { traitPath } from "./traitPath.ts"

/**
 * Sets a trait by key. A key the trait schema declares is offered as typed, and its value field
 * follows its type (a select for an enum); other text that is not JSON is a string value.
 */
export const NewTrait = (props: {
  readonly profileId: string
  readonly definitions: ReadonlyMap<string, TraitDefinition>
  readonly onAdded: () => Promise<void>
}) => {
  const { profileId, definitions, onAdded } = props
  const [key, setKey] = useState("")
  const [text, setText] = useState("")
  const [error, setError] = useState<string | null>(null)
  const definition = definitions.get(key.trim())
  const add = async (event: Event) => {
    event.preventDefault()
    let value: unknown = text
    if (definition?.valueType !== "enum" && definition?.valueType !== "string") {
      try {
        value = JSON.parse(text)
      } catch {
        // Text that is not JSON is a string value.
      }
    }
    try {
      await request("PUT", traitPath(profileId, key.trim()), { value })
      await onAdded()
      setKey("")
      setText("")
      setError(null)
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  return (
    <form class="row" onSubmit={add} aria-labelledby="new-trait-title">
      <h3 id="new-trait-title" class="visually-hidden">
        Add a trait
      </h3>
      <label for="new-trait-key">
        Key
        <input
          id="new-trait-key"
          list="trait-keys"
          autocapitalize="off"
          spellcheck={false}
          value={key}
          onInput={(e) => {
            setKey(e.currentTarget.value)
            setText("")
          }}
          required
        />
      </label>
      <datalist id="trait-keys">
        {[...definitions.keys()].map((name) => (
          <option value={name} />
        ))}
      </datalist>
      <label for="new-trait-value">
        Value{definition === undefined ? "" : ` (${definition.valueType})`}
        <TraitValueField
          id="new-trait-value"
          valueType={definition?.valueType ?? "string"}
          definition={definition}
          text={text}
          onText={setText}
          invalid={error !== null}
        />
      </label>
      <button type="submit">Add trait</button>
      <ErrorNote error={error} />
    </form>
  )
}
