import { useState } from "preact/hooks"
import { ApiError, request } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { when } from "../../format.ts"
import { CategoriesField } from "./CategoriesField.tsx"
import { RetentionFields } from "./RetentionFields.tsx"
import { SettingsStatus } from "./SettingsStatus.tsx"
import {
  FIELD,
  fieldOf,
  invalidIf,
  MAX_INSTRUCTIONS_LENGTH,
  type NamespaceSettings,
  type Problem,
  type SettingsForm,
  settingsPath,
  toForm,
  toPayload
} from "./settingsForm.ts"
import { TraitSchemaField } from "./TraitSchemaField.tsx"

const INSTRUCTIONS_HINT = "settings-instructions-hint"

/**
 * A namespace's settings, edited as one form and saved whole (`PUT`): what the gateway answers is shown
 * again as saved; its refusal is said beside the Save button, the field it names marked. A trait schema
 * that is not JSON is said here, and nothing is sent.
 */
export const SettingsEditor = ({ initial }: { readonly initial: NamespaceSettings }) => {
  const [saved, setSaved] = useState(initial)
  const [form, setForm] = useState<SettingsForm>(() => toForm(initial))
  const [problem, setProblem] = useState<Problem | null>(null)
  const [busy, setBusy] = useState(false)
  /** Said once a save went through, until the form is changed again. */
  const [savedNote, setSavedNote] = useState<string | null>(null)
  const invalid = fieldOf(problem?.param ?? null)
  const edit = (change: Partial<SettingsForm>) => {
    setForm({ ...form, ...change })
    setSavedNote(null)
  }
  const refuse = (refusal: Problem) => {
    setProblem(refusal)
    const field = fieldOf(refusal.param)
    // Straight to the field named, if it can take focus (a group's first field otherwise).
    requestAnimationFrame(() => {
      const target = field === null ? null : document.getElementById(field)
      ;(target?.matches("input, textarea") ? target : target?.querySelector<HTMLElement>("input, textarea"))?.focus()
    })
  }
  const save = async (event: Event) => {
    event.preventDefault()
    setSavedNote(null)
    const sent = toPayload(form)
    if ("message" in sent) {
      refuse(sent)
      return
    }
    setBusy(true)
    setProblem(null)
    try {
      const settings = await request<NamespaceSettings>("PUT", settingsPath(saved.namespace), sent.payload)
      setSaved(settings)
      setForm(toForm(settings))
      setSavedNote(`Saved ${when(settings.updatedAt)}.`)
    } catch (failure) {
      refuse(
        failure instanceof ApiError
          ? { message: failure.message, param: failure.param }
          : { message: (failure as Error).message, param: null }
      )
    } finally {
      setBusy(false)
    }
  }
  const discard = () => {
    setForm(toForm(saved))
    setProblem(null)
    setSavedNote(null)
  }
  return (
    <>
      <SettingsStatus settings={saved} />
      <form class="settings" aria-label={`Settings of ${saved.namespace}`} onSubmit={save}>
        <div class="settings-group">
          <label for={FIELD.instructions}>Extraction instructions</label>
          <p class="muted" id={INSTRUCTIONS_HINT}>
            Added to the extraction model's instructions for this namespace's turns: what to learn, what to leave out.{" "}
            {form.instructions.length.toLocaleString("en")} of {MAX_INSTRUCTIONS_LENGTH.toLocaleString("en")}{" "}
            characters.
          </p>
          <textarea
            {...invalidIf(invalid, FIELD.instructions, INSTRUCTIONS_HINT)}
            rows={5}
            maxLength={MAX_INSTRUCTIONS_LENGTH}
            value={form.instructions}
            onInput={(e) => edit({ instructions: e.currentTarget.value })}
          />
        </div>
        <CategoriesField
          categories={form.categories}
          invalid={invalid}
          onChange={(categories) => edit({ categories })}
        />
        <TraitSchemaField
          namespace={saved.namespace}
          value={form.traitSchema}
          invalid={invalid}
          savedAt={saved.updatedAt}
          onInput={(traitSchema) => edit({ traitSchema })}
        />
        <RetentionFields
          turnsDays={form.turnsDays}
          memoryDays={form.memoryDays}
          invalid={invalid}
          onTurnsDays={(turnsDays) => edit({ turnsDays })}
          onMemoryDays={(memoryDays) => edit({ memoryDays })}
        />
        <div class="actions">
          <button type="submit" disabled={busy}>
            Save settings
          </button>
          <button type="button" disabled={busy} onClick={discard}>
            Discard changes
          </button>
        </div>
        <div id={FIELD.error}>
          <ErrorNote error={problem?.message ?? null} />
        </div>
        <p class="muted" role="status">
          {savedNote}
        </p>
      </form>
    </>
  )
}
