import type { UsageRow } from "../../api.ts"
import { ScrollTable, TableHead } from "../../components/Table.tsx"
import { cost, count, share } from "../../format.ts"

/** How many of a grouping's rows are listed: the biggest (the report lists them biggest first). */
const TOP = 10

/** The biggest groups of a report (keys, users or models): their requests, tokens and cost. */
export const TopTable = (props: {
  /** The table's name and its first column's ("Key", "User", "Model"). */
  readonly title: string
  readonly column: string
  readonly rows: ReadonlyArray<UsageRow>
  /** How a row's group is said (a key by its first characters, a missing user as such). */
  readonly name: (group: string | null) => string
}) => {
  const { title, column, rows, name } = props
  const shown = rows.slice(0, TOP)
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      {shown.length === 0 ? (
        <p class="muted">No usage in this period.</p>
      ) : (
        <>
          {rows.length > TOP && (
            <p class="muted">
              The {TOP} that used the most tokens, of {rows.length}.
            </p>
          )}
          <ScrollTable caption={title}>
            <TableHead columns={[column, "Requests", "Input", "Cached", "Output", "Injected", "Memory work", "Cost"]} />
            <tbody>
              {shown.map((row) => (
                <tr data-group={row.group ?? ""}>
                  <th scope="row">{name(row.group)}</th>
                  <td data-column="requests">{count(row.requests)}</td>
                  <td data-column="input">{count(row.inputTokens)}</td>
                  <td data-column="cached">{count(row.cachedInputTokens)}</td>
                  <td data-column="output">{count(row.outputTokens)}</td>
                  <td data-column="injected">{count(row.injectedTokens)}</td>
                  <td data-column="memory-work">{count(row.memoryWorkTokens)}</td>
                  <td data-column="cost">{cost(row.cost)}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        </>
      )}
    </section>
  )
}

const WORK: Readonly<Record<string, string>> = {
  app: "App traffic",
  extraction: "Memory extraction",
  summary: "Profile summaries",
  cues: "Memory cues",
  thread_summary: "Thread summaries",
  embedding: "Embeddings"
}

/** The app's traffic beside the gateway's own memory work: calls, tokens, their share and cost. */
export const WorkTable = ({ rows }: { readonly rows: ReadonlyArray<UsageRow> }) => {
  const tokens = (row: UsageRow) => row.inputTokens + row.outputTokens + row.memoryWorkTokens
  const all = rows.reduce((sum, row) => sum + tokens(row), 0)
  return (
    <section aria-label="App traffic and memory work">
      <h2>App traffic and memory work</h2>
      {rows.length === 0 ? (
        <p class="muted">No usage in this period.</p>
      ) : (
        <ScrollTable caption="App traffic and memory work">
          <TableHead columns={["Work", "Requests or calls", "Tokens", "Share of tokens", "Cost"]} />
          <tbody>
            {rows.map((row) => (
              <tr data-work={row.group ?? ""}>
                <th scope="row">{WORK[row.group ?? ""] ?? row.group ?? "—"}</th>
                <td data-column="calls">{count(row.group === "app" ? row.requests : row.memoryWorkCalls)}</td>
                <td data-column="tokens">{count(tokens(row))}</td>
                <td data-column="share">{share(tokens(row), all)}</td>
                <td data-column="cost">{cost(row.cost)}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
    </section>
  )
}
