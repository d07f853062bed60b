import type { Memory, RankedMemory } from "../../api.ts"
import { SortHeader, sortAnnouncement } from "../../components/SortHeader.tsx"
import { type SortColumn, useSort } from "../../components/useSort.ts"
import { MemoryRow } from "./MemoryRow.tsx"

type Row = Memory | RankedMemory

const time = (iso: string | null) => (iso === null ? null : Date.parse(iso))

const COLUMNS: ReadonlyArray<SortColumn<Row>> = [
  { key: "content", label: "Content", value: (m) => m.content },
  { key: "type", label: "Type", value: (m) => m.type },
  { key: "importance", label: "Importance", value: (m) => m.importance },
  { key: "decay", label: "Decay", value: (m) => m.decayFactor },
  { key: "created", label: "Created", value: (m) => time(m.createdAt) },
  { key: "injected", label: "Last injected", value: (m) => time(m.lastAccessedAt) }
]
const SCORE: SortColumn<Row> = { key: "score", label: "Score", value: (m) => ("score" in m ? m.score : null) }

/**
 * A page of memories as a table, one line each, sorted by a click on a column's header. The sort
 * orders the page shown (the gateway pages them by importance × decay, or by rank for a message).
 */
export const MemoryTable = (props: {
  readonly base: string
  readonly memories: ReadonlyArray<Row>
  readonly ranked: boolean
  readonly onChanged: () => Promise<void>
}) => {
  const { base, memories, ranked, onChanged } = props
  const columns = ranked ? [...COLUMNS, SCORE] : COLUMNS
  const { sorted, sort, toggle } = useSort(memories, columns)
  const labelOf = (key: string) => columns.find((c) => c.key === key)?.label ?? key
  const order = ranked ? "Ranked for the message, most relevant first." : "By importance × decay, newest first."
  return (
    <>
      <div class="scroll table-box">
        <table class="dense memories">
          <caption class="visually-hidden">Memories. {sortAnnouncement(sort, labelOf, order)}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <SortHeader
                  column={column.key}
                  label={column.label}
                  sort={sort}
                  onSort={toggle}
                  {...(column.key === "content" ? { class: "grow-column" } : {})}
                />
              ))}
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sorted.map((memory) => (
              <MemoryRow
                key={memory.id}
                base={base}
                memory={memory}
                columns={columns.length + 1}
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
