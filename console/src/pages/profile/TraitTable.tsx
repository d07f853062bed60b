import type { Trait, TraitDefinition } from "../../api.ts"
import { SortHeader, sortAnnouncement } from "../../components/SortHeader.tsx"
import { type SortColumn, useSort } from "../../components/useSort.ts"
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

const labelOf = (key: string) => COLUMNS.find((c) => c.key === key)?.label ?? key

/** The traits as a table, one line each, sorted by a click on a column's header. */
export const TraitTable = (props: {
  readonly profileId: string
  readonly traits: ReadonlyArray<Trait>
  readonly definitions: ReadonlyMap<string, TraitDefinition>
  readonly onChanged: () => Promise<void>
}) => {
  const { profileId, traits, definitions, onChanged } = props
  const { sorted, sort, toggle } = useSort(traits, COLUMNS)
  const order = "In the gateway's order."
  return (
    <>
      <div class="scroll table-box">
        <table class="dense traits">
          <caption class="visually-hidden">Traits. {sortAnnouncement(sort, labelOf, order)}</caption>
          <thead>
            <tr>
              {COLUMNS.map((column) => (
                <SortHeader
                  column={column.key}
                  label={column.label}
                  sort={sort}
                  onSort={toggle}
                  {...(column.key === "value" ? { class: "grow-column" } : {})}
                />
              ))}
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sorted.map((trait) => (
              <TraitRow
                key={trait.key}
                profileId={profileId}
                trait={trait}
                definition={definitions.get(trait.key)}
                columns={COLUMNS.length + 1}
                onChanged={onChanged}
              />
            ))}
          </tbody>
        </table>
      </div>
      <p class="visually-hidden" aria-live="polite">
        {sort === null ? "" : sortAnnouncement(sort, labelOf, order)}
      </p>
    </>
  )
}
