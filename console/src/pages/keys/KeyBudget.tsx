import { useState } from "preact/hooks"
import { type ApiKey, type BudgetPeriod, type BudgetState, request } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { Time } from "../../components/Time.tsx"
import { useAction } from "../../components/useAction.ts"
import { ago, cost, count, until } from "../../format.ts"

const PER: Readonly<Record<BudgetPeriod, string>> = { day: "today", month: "this month" }

/** A budget's limit and what its period spent, in tokens or in cost as it is given. */
const limitText = (budget: BudgetState) =>
  budget.cost === undefined
    ? `${count(budget.spent)} / ${count(budget.tokens ?? 0)} tokens ${PER[budget.period]}`
    : `${cost(budget.spent)} / ${cost(budget.cost)} ${PER[budget.period]}`

/** What a key used this period (its budget's, else the month), what it cost, and when it was last used. */
export const KeyUsageCell = ({ apiKey: key }: { readonly apiKey: ApiKey }) => (
  <td data-usage>
    <span class="nowrap">{count(key.usage.tokens)} tokens</span> ·{" "}
    <span class="nowrap">{count(key.usage.requests)} requests</span>
    <div class="muted">
      {PER[key.usage.period]} · cost {cost(key.usage.cost)} · last used{" "}
      {key.usage.lastUsedAt === null ? "never" : <Time iso={key.usage.lastUsedAt} text={ago} />}
    </div>
  </td>
)

/**
 * A key's budget, in its cell: spent of the limit this period and when it starts anew; set (tokens or cost,
 * per UTC day or month), changed or removed while the key is live.
 */
export const KeyBudget = (props: {
  readonly apiKey: ApiKey
  readonly live: boolean
  readonly onChanged: () => Promise<void>
}) => {
  const { apiKey: key, live, onChanged } = props
  const budget = key.budget
  const [editing, setEditing] = useState(false)
  const [unit, setUnit] = useState<"tokens" | "cost">(budget?.cost === undefined ? "tokens" : "cost")
  const [amount, setAmount] = useState(String(budget?.tokens ?? budget?.cost ?? ""))
  const [period, setPeriod] = useState<BudgetPeriod>(budget?.period ?? "month")
  const { busy, error, act } = useAction()
  const path = `/api/keys/${encodeURIComponent(key.id)}/budget`
  const save = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      await request("PUT", path, { [unit]: Number(amount), period })
      setEditing(false)
      await onChanged()
    })
  }
  const remove = () =>
    void act(async () => {
      await request("DELETE", path)
      await onChanged()
    })
  return (
    <td data-budget={budget === null ? "none" : budget.cost === undefined ? "tokens" : "cost"}>
      {budget === null ? (
        <span class="muted">None</span>
      ) : (
        <>
          <span data-budget-limit>{limitText(budget)}</span>
          <div class="muted">
            Resets <Time iso={budget.resetsAt} text={(iso) => until(iso)} />
          </div>
        </>
      )}
      {live && !editing && (
        <div class="actions">
          <button
            type="button"
            aria-label={`${budget === null ? "Set" : "Change"} budget of key ${key.prefix}`}
            onClick={() => setEditing(true)}
          >
            {budget === null ? "Set budget…" : "Change…"}
          </button>
          {budget !== null && (
            <button type="button" disabled={busy} aria-label={`Remove budget of key ${key.prefix}`} onClick={remove}>
              Remove
            </button>
          )}
        </div>
      )}
      {live && editing && (
        <form class="confirm" aria-label={`Budget of key ${key.prefix}`} onSubmit={save}>
          <div class="row">
            <label>
              Limit in
              <select value={unit} onChange={(e) => setUnit(e.currentTarget.value as "tokens" | "cost")}>
                <option value="tokens">tokens</option>
                <option value="cost">cost (MODEL_PRICES)</option>
              </select>
            </label>
            <label>
              Limit
              <input
                type="number"
                required
                min={unit === "tokens" ? 1 : 0.0001}
                step={unit === "tokens" ? 1 : "any"}
                value={amount}
                onInput={(e) => setAmount(e.currentTarget.value)}
              />
            </label>
            <label>
              Per
              <select value={period} onChange={(e) => setPeriod(e.currentTarget.value as BudgetPeriod)}>
                <option value="day">day (UTC)</option>
                <option value="month">month (UTC)</option>
              </select>
            </label>
          </div>
          <div class="actions">
            <button type="submit" disabled={busy}>
              Save budget
            </button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <ErrorNote error={error} />
    </td>
  )
}
