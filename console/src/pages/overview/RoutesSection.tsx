import { ApiError, type BreakerState, loadRoutes, type RoutesView, type RouteTarget } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { ScrollTable, TableHead } from "../../components/Table.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { clock, count, share } from "../../format.ts"
import { type Reading, total } from "../../metrics.ts"

const retries = (n: number) => `${n} ${n === 1 ? "retry" : "retries"}`

/** The first and the latest reading of `/metrics` the overview holds: the rates are taken between them. */
export interface MetricsWindow {
  readonly from: Reading
  readonly to: Reading
}

const COLUMNS = [
  "Target",
  "Order",
  "Weight",
  "Key",
  "Timeout",
  "Retries",
  "Breaker",
  "Attempts /min",
  "Failed",
  "Retries /min",
  "Fallbacks /min"
]

const BREAKER: Readonly<Record<BreakerState, string>> = { closed: "Closed", open: "Open", half_open: "Half-open" }

/** How much a target's counter grew between the two readings (never negative: a restarted replica starts at 0). */
const grew = (window: MetricsWindow, name: string, labels: Readonly<Record<string, string>>) =>
  Math.max(0, total(window.to.samples, name, labels) - total(window.from.samples, name, labels))

const minutesOf = (window: MetricsWindow | undefined) =>
  window === undefined ? 0 : (window.to.at - window.from.at) / 60_000

/** Per minute between the two readings; "—" before there are two. */
const perMinute = (window: MetricsWindow | undefined, name: string, labels: Readonly<Record<string, string>>) => {
  const minutes = minutesOf(window)
  return window === undefined || minutes <= 0 ? "—" : (grew(window, name, labels) / minutes).toFixed(1)
}

/** The share of the target's attempts that failed between the two readings; "—" without attempts. */
const failedShare = (window: MetricsWindow | undefined, labels: Readonly<Record<string, string>>) => {
  if (window === undefined || minutesOf(window) <= 0) return "—"
  const attempts = grew(window, "gateway_upstream_attempts_total", labels)
  const answered = grew(window, "gateway_upstream_attempts_total", { ...labels, outcome: "answered" })
  return share(attempts - answered, attempts)
}

/** A route's targets as they are tried: by order, then as the file lists them (`order` defaults to the position). */
const inOrder = (targets: ReadonlyArray<RouteTarget>) =>
  targets
    .map((target, index) => ({ target, index }))
    .sort((a, b) => a.target.order - b.target.order || a.index - b.index)

const TargetRow = (props: {
  readonly route: string
  readonly target: RouteTarget
  /** The weights of the targets of its order, summed: its share of the requests that start at that order. */
  readonly orderWeight: number
  readonly window: MetricsWindow | undefined
}) => {
  const { route, target, orderWeight, window } = props
  const labels = { route, target: target.target }
  return (
    <tr data-target={target.target} class={`breaker-${target.breaker}`}>
      <th scope="row">
        <code>{target.target}</code>
        <span class="note">{target.baseUrl}</span>
      </th>
      <td class="number">{target.order}</td>
      <td class="nowrap">
        {count(target.weight)}
        {orderWeight > target.weight && <span class="note">{share(target.weight, orderWeight)} of first tries</span>}
      </td>
      <td>{target.apiKeyEnv === null ? <span class="muted">provider's</span> : <code>{target.apiKeyEnv}</code>}</td>
      <td class="nowrap">
        {target.timeoutMs === null ? <span class="muted">default</span> : `${target.timeoutMs} ms`}
      </td>
      <td class="number">{target.retries}</td>
      <td>
        <span class={`badge breaker-${target.breaker}`}>{BREAKER[target.breaker]}</span>
      </td>
      <td class="number">{perMinute(window, "gateway_upstream_attempts_total", labels)}</td>
      <td class="number">{failedShare(window, labels)}</td>
      <td class="number">{perMinute(window, "gateway_upstream_retries_total", labels)}</td>
      <td class="number">{perMinute(window, "gateway_route_fallbacks_total", labels)}</td>
    </tr>
  )
}

const RouteTable = (props: {
  readonly route: RoutesView["routes"][number]
  readonly window: MetricsWindow | undefined
}) => {
  const { route, window } = props
  const weightOf = (order: number) =>
    route.targets.filter((target) => target.order === order).reduce((sum, target) => sum + target.weight, 0)
  return (
    <div class="route">
      <h3>
        <code>{route.model}</code>
      </h3>
      <ScrollTable focusable class="routes" caption={`Targets of ${route.model}, in the order they are tried`}>
        <TableHead columns={COLUMNS} />
        <tbody>
          {inOrder(route.targets).map(({ target, index }) => (
            <TargetRow
              key={index}
              route={route.model}
              target={target}
              orderWeight={weightOf(target.order)}
              window={window}
            />
          ))}
        </tbody>
      </ScrollTable>
    </div>
  )
}

/**
 * The routed models (`ROUTES_FILE`) and their targets: order, weight, key, retries and breaker (open
 * ones in the warning colour), with each target's attempts, failures, retries and fallbacks from
 * `/metrics`. Read again with every reading of the metrics. The routes are the global admin's: a
 * namespace's own admin key gets a note, not an error.
 */
export const RoutesSection = (props: {
  readonly window: MetricsWindow | undefined
  /** When the metrics were last read: the routes (and their breakers) are read again then. */
  readonly tick: number | undefined
}) => {
  const { window, tick } = props
  const [routes] = useLoad(loadRoutes, [tick])
  const minutes = minutesOf(window)
  return (
    <section aria-labelledby="routes-heading">
      <h2 id="routes-heading">Routes</h2>
      {routes.state === "loading" ? (
        <p class="muted" aria-live="polite">
          Loading…
        </p>
      ) : routes.state === "failed" ? (
        routes.error instanceof ApiError && routes.error.status === 403 ? (
          <p class="muted">The routes are the global admin's: sign in with the environment's admin key to see them.</p>
        ) : (
          <ErrorNote error={routes.error} />
        )
      ) : routes.value.file === null ? (
        <p class="muted">No routes file (ROUTES_FILE is not set): each request goes to the provider it names.</p>
      ) : routes.value.routes.length === 0 ? (
        <p class="muted">
          <code>{routes.value.file}</code> routes no model.
        </p>
      ) : (
        <>
          <p class="muted">
            From <code>{routes.value.file}</code>. A request tries the targets by order, those of equal order sharing
            the first tries by weight; a target gets {retries(routes.value.retries)} before the first byte
            (UPSTREAM_RETRIES) unless it says otherwise. Breakers are those of the replica that answered
            {window !== undefined && minutes > 0 ? `; rates are per minute since ${clock(window.from.at)}.` : "."}
          </p>
          {routes.value.routes.map((route) => (
            <RouteTable key={route.model} route={route} window={window} />
          ))}
        </>
      )}
    </section>
  )
}
