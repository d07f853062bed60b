import { shortWhen, when } from "../format.ts"

/**
 * An instant in a table cell: said briefly (by default the short date and time; `text` says it
 * otherwise, "in 5 min", "3 h ago"), the whole date and time on hover, the instant itself in `dateTime`.
 */
export const Time = ({ iso, text = shortWhen }: { readonly iso: string; readonly text?: (iso: string) => string }) => (
  <time dateTime={iso} title={when(iso)}>
    {text(iso)}
  </time>
)
