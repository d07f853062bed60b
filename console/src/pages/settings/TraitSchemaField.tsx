import { useState } from "preact/hooks"
import { namespaceKey, request, storedKey, TRAIT_DEFINITIONS_PATH, type TraitDefinition } from "../../api.ts"
import { Show } from "../../components/Status.tsx"
import { ScrollTable, TableHead } from "../../components/Table.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { FIELD, invalidIf } from "./settingsForm.ts"

const HINT = "settings-trait-schema-hint"
const IN_FORCE = "settings-traits-in-force"

/**
 * The namespace's own trait schema, as JSON in `TRAITS_FILE`'s form (checked as JSON here, by the gateway
 * for the rest); empty: the gateway's. The traits in force (`GET /api/trait-definitions` in the namespace)
 * are shown on demand.
 */
export const TraitSchemaField = (props: {
  readonly namespace: string
  readonly value: string
  readonly invalid: string | null
  /** When the settings were last saved: the traits in force are read again after a save. */
  readonly savedAt: string | null
  readonly onInput: (value: string) => void
}) => {
  const { namespace, value, invalid, savedAt, onInput } = props
  const [shown, setShown] = useState(false)
  return (
    <div class="settings-group">
      <label for={FIELD.traitSchema}>Trait schema (JSON)</label>
      <p class="muted" id={HINT}>
        Empty (or <code>null</code>): the gateway's trait schema. Otherwise an object of trait keys, each{" "}
        <code>{'{ "type": …, "enum"?, "items"?, "description"?, "category"?, "extraction"?, "injection"? }'}</code> as
        in <code>TRAITS_FILE</code>, which replaces the gateway's for this namespace's users. The traits in force are
        listed by <code>GET {TRAIT_DEFINITIONS_PATH}</code>.
      </p>
      <textarea
        {...invalidIf(invalid, FIELD.traitSchema, HINT)}
        class="code"
        rows={10}
        spellcheck={false}
        autocapitalize="off"
        placeholder='{ "plan": { "type": "enum", "enum": ["free", "pro"], "description": "Their plan" } }'
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
      <div class="actions">
        <button type="button" aria-expanded={shown} aria-controls={IN_FORCE} onClick={() => setShown(!shown)}>
          {shown ? "Hide the traits in force" : "Show the traits in force"}
        </button>
      </div>
      <div id={IN_FORCE}>{shown && <TraitsInForce key={savedAt ?? ""} namespace={namespace} />}</div>
    </div>
  )
}

/** The traits declared in the namespace as saved: its own schema, else the gateway's (and the plugins'). */
const TraitsInForce = ({ namespace }: { readonly namespace: string }) => {
  // A namespace's own key acts in its namespace anyway; the global admin asks in the one shown.
  const [definitions, reload] = useLoad(
    () =>
      request<{ definitions: ReadonlyArray<TraitDefinition> }>(
        "GET",
        TRAIT_DEFINITIONS_PATH,
        undefined,
        storedKey(),
        namespaceKey() ? null : namespace
      ),
    [namespace]
  )
  return (
    <>
      <div class="row">
        <p class="muted">A schema saved is in force within a second.</p>
        <button type="button" onClick={() => void reload()}>
          Refresh<span class="visually-hidden"> the traits in force</span>
        </button>
      </div>
      <Show loaded={definitions}>
        {({ definitions }) =>
          definitions.length === 0 ? (
            <p class="muted">No traits are declared in {namespace}.</p>
          ) : (
            <ScrollTable caption={`Traits in force in ${namespace}`} focusable>
              <TableHead columns={["Key", "Type", "Category", "Description"]} />
              <tbody>
                {definitions.map((definition) => (
                  <tr key={definition.key}>
                    <th scope="row">
                      <code>{definition.key}</code>
                    </th>
                    <td>
                      {definition.valueType}
                      {definition.enumValues.length > 0 && (
                        <div class="muted wrap">{definition.enumValues.join(", ")}</div>
                      )}
                    </td>
                    <td>{definition.category}</td>
                    <td class="wrap">{definition.description}</td>
                  </tr>
                ))}
              </tbody>
            </ScrollTable>
          )
        }
      </Show>
    </>
  )
}
