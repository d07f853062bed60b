import { DateTime } from "effect"

/** A column of a table printed for a person: its header and how a row shows in it. */
export interface Column<A> {
  readonly header: string
  readonly cell: (row: A) => string
  /** Numbers line up on the right. */
  readonly align?: "left" | "right"
  /** Longer cells are cut with "…" (default 60 characters). */
  readonly maxWidth?: number
}

const DEFAULT_MAX_WIDTH = 60

/** One line per cell: line breaks and tabs in user text would break the table's rows. */
const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

const fit = (text: string, maxWidth: number) =>
  [...text].length <= maxWidth ? text : `${[...text].slice(0, maxWidth - 1).join("")}…`

/** Rows as an aligned plain-text table (a header line, then one line per row); `empty` when there are none. */
export const renderTable = <A>(columns: ReadonlyArray<Column<A>>, rows: ReadonlyArray<A>, empty = "(none)"): string => {
  if (rows.length === 0) return empty
  const cells = rows.map((row) =>
    columns.map((column) => fit(oneLine(column.cell(row)), column.maxWidth ?? DEFAULT_MAX_WIDTH))
  )
  const widths = columns.map((column, i) =>
    Math.max([...column.header].length, ...cells.map((line) => [...(line[i] ?? "")].length))
  )
  const line = (values: ReadonlyArray<string>) =>
    values
      .map((value, i) => {
        const pad = " ".repeat(widths[i]! - [...value].length)
        return columns[i]!.align === "right" ? pad + value : value + pad
      })
      .join("  ")
      .trimEnd()
  return [line(columns.map((column) => column.header)), ...cells.map(line)].join("\n")
}

/** A time to the second, in UTC ("—" for none). */
export const renderTime = (time: DateTime.DateTime | null): string =>
  time === null ? "—" : `${DateTime.formatIso(time).slice(0, 19)}Z`

/** A record as "key: value" lines, keys aligned. */
export const renderFields = (fields: ReadonlyArray<readonly [string, string]>): string => {
  const width = Math.max(...fields.map(([key]) => key.length))
  return fields.map(([key, value]) => `${`${key}:`.padEnd(width + 2)}${value}`).join("\n")
}
