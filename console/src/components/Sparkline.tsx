/** A small line chart of the latest values, with the current one written beside it. */
export const Sparkline = (props: {
  readonly label: string
  readonly values: ReadonlyArray<number | null>
  readonly format: (value: number) => string
}) => {
  const { label, values, format } = props
  const known = values.filter((value): value is number => value !== null)
  const current = known.at(-1)
  const width = 160
  const height = 40
  const max = Math.max(...known, 0) || 1
  const points = values
    .map((value, index) =>
      value === null
        ? null
        : `${(index / Math.max(1, values.length - 1)) * width},${height - (value / max) * (height - 4) - 2}`
    )
    .filter((point): point is string => point !== null)
    .join(" ")
  return (
    <figure class="metric">
      <figcaption>{label}</figcaption>
      <strong>{current === undefined ? "—" : format(current)}</strong>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label={`${label}, last ${known.length} readings`}
      >
        <polyline points={points} fill="none" stroke="currentColor" stroke-width="2" />
      </svg>
    </figure>
  )
}
