/** Previous / next over `total` items, `size` a page; says which ones are shown. */
export const Pager = (props: {
  readonly offset: number
  readonly size: number
  readonly shown: number
  readonly total: number | null
  readonly label: string
  readonly onOffset: (offset: number) => void
}) => {
  const { offset, size, shown, total, label, onOffset } = props
  const last = offset + shown
  const more = total === null ? shown === size : last < total
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - size))}>
        Previous
      </button>
      <span aria-live="polite">
        {shown === 0 ? "None" : `${offset + 1}–${last}`}
        {total === null ? "" : ` of ${total}`}
      </span>
      <button type="button" disabled={!more} onClick={() => onOffset(offset + size)}>
        Next
      </button>
    </nav>
  )
}
