import type { Trait, TraitDefinition } from "../../api.ts"
import { SortableTable } from "../../components/SortableTable.tsx"
import type { SortColumn } from "../../components/useSort.ts"
import { valueText } from "../../format.ts"
import { TraitRow } from "./TraitRow.tsx"

const COLUMNS: ReadonlyArray<SortColumn<Trait>> = [
  { key: "key", label: "Key", value: (t) => t.key },
  { key: "value", label: "Value", value: (t) => valueText(t.value) },
  { key: "type", label: "Type", value: (t) => t.valueType },
  { key: "category", label: "Category", value: (t) => t.category },
  { key: "source", label: "Source", value: (t) => t.source },
  { key: "confidence", label: "Confidence", value: (t) => t.confidence },
  { key: "updated", label: "Updated", value: (t) => Date.parse(t.updatedAt) }
]

/** The traits as a table, one line each, sorted by a click on a column's header. */
export const TraitTable = (props: {
  readonly profileId: string
  readonly traits: ReadonlyArray<Trait>
  readonly definitions: ReadonlyMap<string, TraitDefinition>
  readonly onChanged: () => Promise<void>
}) => {
  const { profileId, traits, definitions, onChanged } = props
  return (
    <SortableTable
      name="Traits"
      class="traits"
      columns={COLUMNS}
      grow="value"
      rows={traits}
      unsorted="In the gateway's order."
    >
      {(trait, span) => (
        <TraitRow
          key={trait.key}
          profileId={profileId}
          trait={trait}
          definition={definitions.get(trait.key)}
          columns={span}
          onChanged={onChanged}
        />
      )}
    </SortableTable>
  )
}
