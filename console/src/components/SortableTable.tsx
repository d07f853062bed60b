import type { ComponentChildren } from "preact"
import { ActionsHeader, ScrollTable } from "./Table.tsx"
import { type Sort, type SortColumn, useSort } from "./useSort.ts"

/**
 * A column header that sorts the table: a button in the `<th>`, which carries `aria-sort` while the
 * rows are sorted by it. The arrow is drawn for sighted users; screen readers hear `aria-sort`.
 */
const SortHeader = (props: {
  readonly column: string
  readonly label: string
  readonly sort: Sort | null
  readonly onSort: (column: string) => void
  readonly class?: string
}) => {
  const { column, label, sort, onSort } = props
  const direction = sort?.key === column ? sort.direction : undefined
  return (
    <th scope="col" aria-sort={direction} class={props.class}>
      <button type="button" class="sort" onClick={() => onSort(column)}>
        {label}
        <span aria-hidden="true" class="sort-arrow">
          {direction === "ascending" ? "▲" : direction === "descending" ? "▼" : "↕"}
        </span>
      </button>
    </th>
  )
}

/** Said once the rows are re-sorted (a polite live region), since the click itself changes nothing under focus. */
const sortAnnouncement = (sort: Sort | null, labelOf: (key: string) => string, unsorted: string): string =>
  sort === null ? unsorted : `Sorted by ${labelOf(sort.key).toLowerCase()}, ${sort.direction}.`

/**
 * A dense table sorted by a click on a column's header, with a last column for each row's buttons.
 * The sort orders the rows given (see `useSort`); the caption says the order, and a polite live region
 * says it again when it changes.
 */
export const SortableTable = <Row,>(props: {
  /** The table's name ("Memories"), said first in its caption. */
  readonly name: string
  readonly class: string
  readonly columns: ReadonlyArray<SortColumn<Row>>
  /** The column that takes the room left over (`grow-column`). */
  readonly grow: string
  readonly rows: ReadonlyArray<Row>
  /** The order of the rows as given, said while no column sorts them. */
  readonly unsorted: string
  /** A row (with its key), or its lines; `span` is the count of columns, for a line beneath that spans them. */
  readonly children: (row: Row, span: number) => ComponentChildren
}) => {
  const { name, columns, grow, rows, unsorted, children } = props
  const { sorted, sort, toggle } = useSort(rows, columns)
  const labelOf = (key: string) => columns.find((c) => c.key === key)?.label ?? key
  const span = columns.length + 1
  return (
    <>
      <ScrollTable dense class={props.class} caption={`${name}. ${sortAnnouncement(sort, labelOf, unsorted)}`}>
        <thead>
          <tr>
            {columns.map((column) => (
              <SortHeader
                key={column.key}
                column={column.key}
                label={column.label}
                sort={sort}
                onSort={toggle}
                {...(column.key === grow ? { class: "grow-column" } : {})}
              />
            ))}
            <ActionsHeader />
          </tr>
        </thead>
        <tbody>{sorted.map((row) => children(row, span))}</tbody>
      </ScrollTable>
      <p class="visually-hidden" aria-live="polite">
        {sort === null ? "" : sortAnnouncement(sort, labelOf, unsorted)}
      </p>
    </>
  )
}
