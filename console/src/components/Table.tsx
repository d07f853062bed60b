import type { ComponentChildren } from "preact"

/**
 * A table that scrolls sideways in its own box when wider than the page, never the page itself, named
 * for screen readers by a caption they alone hear. A dense table (one line a row: memories, traits,
 * jobs) sits in a box its cells measure themselves against (`table-box`). A table with nothing in it
 * to focus (no buttons, no links) is `focusable`: its box takes focus, so the keyboard can scroll it too.
 */
export const ScrollTable = (props: {
  /** The table's name, said as its caption. */
  readonly caption: ComponentChildren
  /** The table's own class, for its column widths. */
  readonly class?: string
  readonly dense?: boolean
  /** The box is a named region in the tab order (for the `caption` given as text). */
  readonly focusable?: boolean
  readonly children: ComponentChildren
}) => {
  const { caption, dense = false, focusable = false, children } = props
  const names = [dense ? "dense" : "", props.class ?? ""].join(" ").trim()
  const region =
    focusable && typeof caption === "string" ? { tabIndex: 0, role: "region" as const, "aria-label": caption } : {}
  return (
    <div class={dense ? "scroll table-box" : "scroll"} {...region}>
      <table class={names === "" ? undefined : names}>
        <caption class="visually-hidden">{caption}</caption>
        {children}
      </table>
    </div>
  )
}

/** The header of a column of row buttons: named for screen readers, blank on the screen. */
export const ActionsHeader = () => (
  <th scope="col">
    <span class="visually-hidden">Actions</span>
  </th>
)

/** A table's header row of plain column names, with a last column for the rows' buttons when they have any. */
export const TableHead = (props: { readonly columns: ReadonlyArray<string>; readonly actions?: boolean }) => (
  <thead>
    <tr>
      {props.columns.map((label) => (
        <th key={label} scope="col">
          {label}
        </th>
      ))}
      {props.actions === true && <ActionsHeader />}
    </tr>
  </thead>
)
