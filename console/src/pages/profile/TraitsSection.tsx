import { useState } from "preact/hooks"
import { profilePath, request, type Trait, type TraitChange } from "../../api.ts"
import { ErrorNote, Show } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { fixed, parseValue, valueText, when } from "../../format.ts"

/** The traits, each editable and deletable where it is shown, with its history on demand. */
export const TraitsSection = ({ profileId }: { readonly profileId: string }) => {
  const [traits, reload] = useLoad(
    () => request<{ traits: ReadonlyArray<Trait> }>("GET", `${profilePath(profileId)}/traits`),
    [profileId]
  )
  return (
    <>
      <h2>Traits</h2>
      <Show loaded={traits}>
        {({ traits }) =>
          traits.length === 0 ? (
            <p class="muted">No traits yet.</p>
          ) : (
            <ul class="cards">
              {traits.map((trait) => (
                <TraitCard key={trait.key} profileId={profileId} trait={trait} onChanged={reload} />
              ))}
            </ul>
          )
        }
      </Show>
      <NewTrait profileId={profileId} onAdded={reload} />
    </>
  )
}

const traitPath = (profileId: string, key: string) => `${profilePath(profileId)}/traits/${encodeURIComponent(key)}`

const TraitCard = ({
  profileId,
  trait,
  onChanged
}: {
  readonly profileId: string
  readonly trait: Trait
  readonly onChanged: () => void
}) => {
  const [editing, setEditing] = useState(false)
  const [text, setText] = useState(valueText(trait.value))
  const [error, setError] = useState<string | null>(null)
  const [showHistory, setShowHistory] = useState(false)
  const inputId = `trait-${trait.key}`
  const save = async (event: Event) => {
    event.preventDefault()
    const parsed = parseValue(text, trait.valueType)
    if ("error" in parsed) return setError(parsed.error)
    try {
      await request("PUT", traitPath(profileId, trait.key), { value: parsed.value })
      setEditing(false)
      setError(null)
      onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const cancel = () => {
    setEditing(false)
    setError(null)
    setText(valueText(trait.value))
  }
  const remove = async () => {
    if (!confirm(`Delete the trait ${trait.key}?`)) return
    try {
      await request("DELETE", traitPath(profileId, trait.key))
      onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  return (
    <li class="card" data-trait={trait.key}>
      <h3>{trait.key}</h3>
      {editing ? (
        <form onSubmit={save}>
          <label for={inputId}>Value ({trait.valueType})</label>
          <input
            id={inputId}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            aria-invalid={error !== null}
            aria-describedby={`${inputId}-error`}
          />
          <button type="submit">Save</button>
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        </form>
      ) : (
        <p class="value">{valueText(trait.value)}</p>
      )}
      <div id={`${inputId}-error`}>
        <ErrorNote error={error} />
      </div>
      <p class="muted">
        {trait.valueType} · {trait.category} · {trait.source} · confidence {fixed(trait.confidence)} ·{" "}
        {when(trait.updatedAt)}
      </p>
      <div class="actions">
        {!editing && (
          <button type="button" onClick={() => setEditing(true)} aria-label={`Edit ${trait.key}`}>
            Edit
          </button>
        )}
        <button type="button" class="danger" onClick={remove} aria-label={`Delete ${trait.key}`}>
          Delete
        </button>
        <button type="button" aria-expanded={showHistory} onClick={() => setShowHistory(!showHistory)}>
          History
        </button>
      </div>
      {showHistory && <TraitHistory profileId={profileId} traitKey={trait.key} />}
    </li>
  )
}

const TraitHistory = ({ profileId, traitKey }: { readonly profileId: string; readonly traitKey: string }) => {
  const [history] = useLoad(
    () => request<{ history: ReadonlyArray<TraitChange> }>("GET", `${traitPath(profileId, traitKey)}/history`),
    [profileId, traitKey]
  )
  return (
    <Show loaded={history}>
      {({ history }) => (
        <ol class="history">
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

const NewTrait = ({ profileId, onAdded }: { readonly profileId: string; readonly onAdded: () => void }) => {
  const [key, setKey] = useState("")
  const [text, setText] = useState("")
  const [error, setError] = useState<string | null>(null)
  const add = async (event: Event) => {
    event.preventDefault()
    let value: unknown = text
    try {
      value = JSON.parse(text)
    } catch {
      // Text that is not JSON is a string value.
    }
    try {
      await request("PUT", traitPath(profileId, key.trim()), { value })
      setKey("")
      setText("")
      setError(null)
      onAdded()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  return (
    <form class="row" onSubmit={add}>
      <h3 class="visually-hidden">Add a trait</h3>
      <label>
        Key <input value={key} onInput={(e) => setKey(e.currentTarget.value)} required />
      </label>
      <label>
        Value <input value={text} onInput={(e) => setText(e.currentTarget.value)} required />
      </label>
      <button type="submit">Add trait</button>
      <ErrorNote error={error} />
    </form>
  )
}
