import { profilePath, request, TRAIT_DEFINITIONS_PATH, type Trait, type TraitDefinition } from "../../api.ts"
import { Show } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { NewTrait } from "./NewTrait.tsx"
import { TraitTable } from "./TraitTable.tsx"

/**
 * The trait schema's definitions by key. A gateway that does not list them (or refuses) leaves every
 * value a text field, as the gateway still checks each value it is given.
 */
const loadDefinitions = (): Promise<ReadonlyMap<string, TraitDefinition>> =>
  request<{ definitions: ReadonlyArray<TraitDefinition> }>("GET", TRAIT_DEFINITIONS_PATH).then(
    ({ definitions }) => new Map(definitions.map((definition) => [definition.key, definition])),
    () => new Map()
  )

/** The traits, each editable and deletable in its row, with its history on demand. */
export const TraitsSection = ({ profileId }: { readonly profileId: string }) => {
  const [traits, reload] = useLoad(
    () =>
      Promise.all([
        request<{ traits: ReadonlyArray<Trait> }>("GET", `${profilePath(profileId)}/traits`),
        loadDefinitions()
      ]).then(([{ traits }, definitions]) => ({ traits, definitions })),
    [profileId]
  )
  return (
    <>
      <h2>Traits</h2>
      <Show loaded={traits}>
        {({ traits, definitions }) => (
          <>
            {traits.length === 0 ? (
              <p class="muted">No traits yet.</p>
            ) : (
              <TraitTable profileId={profileId} traits={traits} definitions={definitions} onChanged={reload} />
            )}
            <NewTrait profileId={profileId} definitions={definitions} onAdded={reload} />
          </>
        )}
      </Show>
    </>
  )
}
