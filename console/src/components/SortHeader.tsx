import type { Sort } from "./useSort.ts"

/**
 * A column header that sorts the table: a button in the `<th>`, which carries `aria-sort` while the
 * rows are sorted by it. The arrow is drawn for sighted users; screen readers hear `aria-sort`.
 */
export const SortHeader = (props: {
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
export const sortAnnouncement = (sort: Sort | null, labelOf: (key: string) => string, unsorted: string): string =>
  sort === null ? unsorted : `Sorted by ${labelOf(sort.key).toLowerCase()}, ${sort.direction}.`
