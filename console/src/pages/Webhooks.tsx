import { useEffect, useState } from "preact/hooks"
import {
  type CreatedWebhook,
  type Delivery,
  type DeliveryStatus,
  namespacesChanged,
  request,
  seesAllNamespaces,
  WEBHOOK_EVENTS,
  type Webhook
} from "../api.ts"
import { NamespaceField, namespaceOf } from "../components/NamespaceField.tsx"
import { SecretOnce } from "../components/SecretOnce.tsx"
import { ErrorNote, Show } from "../components/Status.tsx"
import { ScrollTable, TableHead } from "../components/Table.tsx"
import { useAction } from "../components/useAction.ts"
import { useLoad } from "../components/useLoad.ts"
import { ago, when } from "../format.ts"
import { href } from "../router.ts"

const STATUSES: ReadonlyArray<DeliveryStatus> = ["pending", "running", "succeeded", "failed"]
const DELIVERIES = 20
/** How soon, and how late at most, deliveries not yet made are read again. */
const FOLLOW_MIN_MS = 1000
const FOLLOW_MAX_MS = 30_000

const webhookPath = (id: string) => `/api/webhooks/${encodeURIComponent(id)}`

/**
 * Webhooks: URLs the gateway posts events to (a memory created, a trait changed, a profile erased, …),
 * created with a signing secret shown once, each with its recent deliveries, any of which can be sent again.
 */
export const Webhooks = () => {
  const all = seesAllNamespaces()
  const [webhooks, reload] = useLoad(() => request<{ webhooks: ReadonlyArray<Webhook> }>("GET", "/api/webhooks"), [])
  const [created, setCreated] = useState<CreatedWebhook | null>(null)
  return (
    <main>
      <h1>Webhooks</h1>
      {created !== null && (
        <SecretOnce
          title="Webhook created"
          label="Signing secret"
          secret={created.secret}
          onDone={() => setCreated(null)}
        >
          <p class="wrap">
            Deliveries to <strong>{created.url}</strong> are signed with this secret: check the signature before
            trusting one.
          </p>
        </SecretOnce>
      )}
      <CreateWebhook
        onCreated={(webhook) => {
          setCreated(webhook)
          reload()
          namespacesChanged()
        }}
      />
      <h2>Existing webhooks</h2>
      <Show loaded={webhooks}>
        {({ webhooks }) =>
          webhooks.length === 0 ? (
            <p class="muted">No webhooks yet.</p>
          ) : (
            <ul class="cards">
              {webhooks.map((webhook) => (
                <WebhookCard
                  key={webhook.id}
                  webhook={webhook}
                  all={all}
                  // Each open webhook loads its deliveries: open them all only while they are few.
                  initiallyOpen={webhooks.length <= 5}
                  onDeleted={reload}
                />
              ))}
            </ul>
          )
        }
      </Show>
    </main>
  )
}

const WebhookCard = (props: {
  readonly webhook: Webhook
  readonly all: boolean
  readonly initiallyOpen: boolean
  readonly onDeleted: () => void
}) => {
  const { webhook, all, initiallyOpen, onDeleted } = props
  const [open, setOpen] = useState(initiallyOpen)
  const [error, setError] = useState<Error | null>(null)
  const remove = async () => {
    if (!confirm(`Delete the webhook to ${webhook.url}? Its pending deliveries are not sent.`)) return
    setError(null)
    try {
      await request("DELETE", webhookPath(webhook.id))
      onDeleted()
    } catch (failure) {
      setError(failure as Error)
    }
  }
  const deliveriesId = `deliveries-${webhook.id}`
  const disabled = webhook.disabledAt !== undefined && webhook.disabledAt !== null
  return (
    <li class={disabled ? "card inactive" : "card"} data-webhook={webhook.id}>
      <h3>{webhook.url}</h3>
      {webhook.description !== null && <p>{webhook.description}</p>}
      <p class="muted">
        {all && (
          <>
            Namespace <strong>{webhook.namespace}</strong> ·{" "}
          </>
        )}
        created {when(webhook.createdAt)}
        {disabled && (
          <>
            {" "}
            · <span class="badge revoked">Disabled</span> {when(webhook.disabledAt ?? null)}
          </>
        )}
      </p>
      <ul class="tags" aria-label="Events">
        {webhook.events.map((event) => (
          <li>
            <code>{event}</code>
          </li>
        ))}
      </ul>
      <div class="actions">
        <button type="button" aria-expanded={open} aria-controls={deliveriesId} onClick={() => setOpen(!open)}>
          {open ? "Hide deliveries" : "Show deliveries"}
        </button>
        <button type="button" class="danger" aria-label={`Delete webhook ${webhook.url}`} onClick={remove}>
          Delete…
        </button>
      </div>
      <ErrorNote error={error} />
      <div id={deliveriesId}>{open && <Deliveries webhook={webhook} />}</div>
    </li>
  )
}

/** The webhook's latest deliveries (of one status, if chosen); any of them can be sent again. */
const Deliveries = ({ webhook }: { readonly webhook: Webhook }) => {
  const [status, setStatus] = useState<DeliveryStatus | "">("")
  const [deliveries, reload] = useLoad(
    () =>
      request<{ deliveries: ReadonlyArray<Delivery> }>(
        "GET",
        `${webhookPath(webhook.id)}/deliveries?limit=${DELIVERIES}${status === "" ? "" : `&status=${status}`}`
      ),
    [webhook.id, status]
  )
  // Deliveries still to be made are followed: read again when the soonest is due (or being made).
  useEffect(() => {
    if (deliveries.state !== "ready") return
    const due = deliveries.value.deliveries
      .filter((delivery) => delivery.status === "pending" || delivery.status === "running")
      .map((delivery) => (delivery.status === "running" ? 0 : Date.parse(delivery.runAfter) - Date.now()))
    if (due.length === 0) return
    const timer = setTimeout(reload, Math.min(Math.max(Math.min(...due), FOLLOW_MIN_MS), FOLLOW_MAX_MS))
    return () => clearTimeout(timer)
  }, [deliveries, reload])
  return (
    <section aria-label={`Deliveries to ${webhook.url}`}>
      <div class="row">
        <label>
          Deliveries
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value as DeliveryStatus | "")}>
            <option value="">all</option>
            {STATUSES.map((name) => (
              <option value={name}>{name}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <Show loaded={deliveries}>
        {({ deliveries }) =>
          deliveries.length === 0 ? (
            <p class="muted">No {status === "" ? "" : `${status} `}deliveries yet.</p>
          ) : (
            <ScrollTable class="deliveries" caption={`Deliveries to ${webhook.url}`}>
              <TableHead columns={["Event", "Profile", "Status", "Attempts", "Response", "When"]} actions />
              <tbody>
                {deliveries.map((delivery) => (
                  <DeliveryRow key={delivery.id} webhook={webhook} delivery={delivery} onReplayed={reload} />
                ))}
              </tbody>
            </ScrollTable>
          )
        }
      </Show>
    </section>
  )
}

/** The receiver's last answer, and why the last attempt failed when that says more. */
const response = ({ responseStatus, lastError }: Delivery): string => {
  const answered = responseStatus === null ? null : `HTTP ${responseStatus}`
  if (lastError === null) return answered ?? "—"
  return answered === null || lastError.includes(answered) ? lastError : `${answered} (${lastError})`
}

const DeliveryRow = (props: {
  readonly webhook: Webhook
  readonly delivery: Delivery
  readonly onReplayed: () => void
}) => {
  const { webhook, delivery, onReplayed } = props
  const { busy, error, act } = useAction()
  const replay = () =>
    act(async () => {
      await request("POST", `${webhookPath(webhook.id)}/deliveries/${encodeURIComponent(delivery.id)}/replay`)
      onReplayed()
    })
  return (
    <tr data-delivery={delivery.id} data-status={delivery.status}>
      <th scope="row">
        <code>{delivery.type}</code>
      </th>
      <td class="wrap">
        {delivery.profile === null ? (
          "—"
        ) : (
          <a href={href({ page: "profile", id: delivery.profile.id })}>{delivery.profile.externalId}</a>
        )}
      </td>
      <td>
        <span class={`badge ${delivery.status}`}>{delivery.status}</span>
      </td>
      <td>{delivery.attempts}</td>
      <td class="wrap">
        {response(delivery)}
        <ErrorNote error={error} />
      </td>
      <td>
        <time dateTime={delivery.finishedAt ?? delivery.updatedAt} title={when(delivery.createdAt)}>
          {ago(delivery.finishedAt ?? delivery.updatedAt)}
        </time>
      </td>
      <td>
        {/* One still pending or running is (re)tried anyway: only a finished one is sent again. */}
        {(delivery.status === "succeeded" || delivery.status === "failed") && (
          <button
            type="button"
            disabled={busy}
            aria-label={`Replay ${delivery.type} delivery ${delivery.id.slice(0, 8)}`}
            onClick={replay}
          >
            Replay
          </button>
        )}
      </td>
    </tr>
  )
}

/** A new webhook: its URL, the events it wants, a description; the namespace when the console shows them all. */
const CreateWebhook = ({ onCreated }: { readonly onCreated: (webhook: CreatedWebhook) => void }) => {
  const [namespace, setNamespace] = useState("default")
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState<ReadonlyArray<string>>([])
  const [description, setDescription] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Error | string | null>(null)
  const toggle = (event: string, on: boolean) =>
    setEvents(on ? WEBHOOK_EVENTS.filter((e) => e === event || events.includes(e)) : events.filter((e) => e !== event))
  const submit = async (event: Event) => {
    event.preventDefault()
    if (events.length === 0) {
      setError("Choose at least one event.")
      return
    }
    setBusy(true)
    setError(null)
    try {
      const webhook = await request<CreatedWebhook>("POST", "/api/webhooks", {
        ...namespaceOf(namespace),
        url: url.trim(),
        events,
        ...(description.trim() === "" ? {} : { description: description.trim() })
      })
      setUrl("")
      setEvents([])
      setDescription("")
      onCreated(webhook)
    } catch (failure) {
      setError(failure as Error)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="new-webhook-title">
      <h2 id="new-webhook-title">New webhook</h2>
      <form onSubmit={submit}>
        <div class="row">
          <NamespaceField id="webhook-namespace" value={namespace} onInput={setNamespace} />
          <label class="grow">
            URL
            <input
              type="url"
              required
              placeholder="https://"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          </label>
          <label class="grow">
            Description (optional)
            <input maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          </label>
        </div>
        <fieldset class="events">
          <legend>Events</legend>
          {WEBHOOK_EVENTS.map((name) => (
            <label class="check">
              <input
                type="checkbox"
                checked={events.includes(name)}
                onChange={(e) => toggle(name, e.currentTarget.checked)}
              />
              <code>{name}</code>
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={busy}>
          Create webhook
        </button>
        <ErrorNote error={error} />
      </form>
    </section>
  )
}
