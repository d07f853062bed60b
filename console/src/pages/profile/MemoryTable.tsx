import type { Memory, RankedMemory } from "../../api.ts"
import { SortableTable } from "../../components/SortableTable.tsx"
import type { SortColumn } from "../../components/useSort.ts"
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
  return (
    <SortableTable
      name="Memories"
      class="memories"
      columns={ranked ? [...COLUMNS, SCORE] : COLUMNS}
      grow="content"
      rows={memories}
      unsorted={ranked ? "Ranked for the message, most relevant first." : "By importance × decay, newest first."}
    >
      {(memory, span) => <MemoryRow key={memory.id} base={base} memory={memory} columns={span} onChanged={onChanged} />}
    </SortableTable>
  )
}
