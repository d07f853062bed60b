import { useState } from "preact/hooks"

export type Direction = "ascending" | "descending"

/** A column the rows can be sorted by: its header and how to read the value compared. */
export interface SortColumn<Row> {
  readonly key: string
  readonly label: string
  readonly value: (row: Row) => string | number | null
}

export interface Sort {
  readonly key: string
  readonly direction: Direction
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" })

/** Empty values last whichever the direction, so sorting never buries what is there under dashes. */
const compare = (a: string | number | null, b: string | number | null, direction: Direction) => {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1
  const order = typeof a === "number" && typeof b === "number" ? a - b : collator.compare(String(a), String(b))
  return direction === "ascending" ? order : -order
}

/**
 * Sorting by a column header: the first click sorts ascending, the second descending, the third
 * returns to the order the gateway gave (its own: by weight, or as ranked). The sort is stable, so
 * rows that tie keep that order.
 */
export const useSort = <Row>(rows: ReadonlyArray<Row>, columns: ReadonlyArray<SortColumn<Row>>) => {
  const [sort, setSort] = useState<Sort | null>(null)
  const column = sort === null ? undefined : columns.find((c) => c.key === sort.key)
  const sorted =
    sort === null || column === undefined
      ? rows
      : [...rows].sort((a, b) => compare(column.value(a), column.value(b), sort.direction))
  const toggle = (key: string) =>
    setSort((current) =>
      current?.key !== key
        ? { key, direction: "ascending" }
        : current.direction === "ascending"
          ? { key, direction: "descending" }
          : null
    )
  return { sorted, sort, toggle } as const
}
