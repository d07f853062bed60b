import { useState } from "preact/hooks"
import {
  type ApiKey,
  type CreatedKey,
  type KeyScope,
  namespacesChanged,
  PROVIDERS,
  type ProviderName,
  request,
  seesAllNamespaces
} from "../api.ts"
import { NamespaceField, namespaceOf } from "../components/NamespaceField.tsx"
import { SecretOnce } from "../components/SecretOnce.tsx"
import { ErrorNote, Show } from "../components/Status.tsx"
import { ScrollTable, TableHead } from "../components/Table.tsx"
import { Time } from "../components/Time.tsx"
import { useAction } from "../components/useAction.ts"
import { useLoad } from "../components/useLoad.ts"
import { when } from "../format.ts"
import { KeyBudget, KeyUsageCell } from "./keys/KeyBudget.tsx"

/** How long a rotated key's old secret keeps working, as offered (the gateway's default: an hour). */
const GRACE: ReadonlyArray<readonly [number, string]> = [
  [0, "not at all"],
  [300, "5 minutes"],
  [3600, "1 hour"],
  [86_400, "1 day"],
  [604_800, "1 week"]
]

type KeyState = "live" | "expired" | "revoked"

const stateOf = (key: ApiKey, now = Date.now()): KeyState =>
  key.revokedAt !== null ? "revoked" : key.expiresAt !== null && Date.parse(key.expiresAt) <= now ? "expired" : "live"

/** The key as a person tells it apart: its first characters and its label. */
const nameOf = (key: ApiKey) => `${key.prefix}…${key.label === null ? "" : ` (${key.label})`}`

/**
 * Keys held in the database, each for one namespace: created (the secret shown once), rotated (a new
 * secret, the old one kept for a grace period) and revoked. Revoked and expired keys stay listed, marked.
 * Each says what it used this period and when it was last used, and has its budget set or removed.
 */
export const Keys = () => {
  const all = seesAllNamespaces()
  const [keys, reload] = useLoad(() => request<{ keys: ReadonlyArray<ApiKey> }>("GET", "/api/keys"), [])
  const [shown, setShown] = useState<{ readonly title: string; readonly key: CreatedKey } | null>(null)
  const created = (title: string, key: CreatedKey) => {
    setShown({ title, key })
    reload()
    namespacesChanged()
  }
  return (
    <main>
      <h1>Keys</h1>
      <p class="muted">
        Keys for one namespace each: an app key admits <code>/v1</code> and <code>/mcp</code>, an admin key the
        management API of its namespace. The environment's keys are not listed.
      </p>
      {shown !== null && (
        <SecretOnce title={shown.title} label="The new key" secret={shown.key.key} onDone={() => setShown(null)}>
          <p>
            {shown.key.scope === "admin" ? "An admin" : "An app"} key for namespace{" "}
            <strong>{shown.key.namespace}</strong>
            {shown.key.label === null ? "" : `, “${shown.key.label}”`}. The gateway keeps only its digest.
            {shown.key.upstreamProvider !== null &&
              ` Its requests go to ${shown.key.upstreamProvider} with the provider key given, kept encrypted and never shown.`}
          </p>
        </SecretOnce>
      )}
      <CreateKey onCreated={(key) => created("Key created", key)} />
      <h2>Existing keys</h2>
      <Show loaded={keys}>
        {({ keys }) =>
          keys.length === 0 ? (
            <p class="muted">No keys yet.</p>
          ) : (
            <ScrollTable caption="Keys">
              <TableHead
                columns={[
                  "Key",
                  ...(all ? ["Namespace"] : []),
                  "Scope",
                  "State",
                  "Requests a minute",
                  "Provider",
                  "Created",
                  "Used this period",
                  "Budget"
                ]}
                actions
              />
              <tbody>
                {keys.map((key) => (
                  <KeyRow
                    key={key.id}
                    apiKey={key}
                    all={all}
                    onChanged={reload}
                    onRotated={(next) => created(`Key ${key.prefix}… rotated`, next)}
                  />
                ))}
              </tbody>
            </ScrollTable>
          )
        }
      </Show>
    </main>
  )
}

const KeyRow = (props: {
  readonly apiKey: ApiKey
  readonly all: boolean
  readonly onChanged: () => Promise<void>
  readonly onRotated: (key: CreatedKey) => void
}) => {
  const { apiKey: key, all, onChanged, onRotated } = props
  const [rotating, setRotating] = useState(false)
  const [grace, setGrace] = useState(3600)
  const { busy, error, act } = useAction()
  const state = stateOf(key)
  const path = `/api/keys/${encodeURIComponent(key.id)}`
  const revoke = () => {
    if (!confirm(`Revoke the key ${nameOf(key)}? Requests with it are refused from now on.`)) return
    void act(async () => {
      await request("DELETE", path)
      await onChanged()
    })
  }
  const rotate = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      const next = await request<CreatedKey>("POST", `${path}/rotate`, { graceSeconds: grace })
      setRotating(false)
      onRotated(next)
    })
  }
  return (
    <tr data-key={key.id} data-state={state} class={state === "live" ? undefined : "inactive"}>
      <th scope="row">
        <code>{key.prefix}…</code>
        {key.label !== null && <div class="wrap label">{key.label}</div>}
      </th>
      {all && <td>{key.namespace}</td>}
      <td>{key.scope}</td>
      <td>
        {state === "revoked" ? (
          <>
            <span class="badge revoked">Revoked</span> {when(key.revokedAt)}
          </>
        ) : state === "expired" ? (
          <>
            <span class="badge expired">Expired</span> {when(key.expiresAt)}
          </>
        ) : (
          <>
            <span class="badge live">Live</span>
            {key.expiresAt !== null && ` until ${when(key.expiresAt)}`}
          </>
        )}
      </td>
      <td>{key.rateLimitPerMinute ?? "—"}</td>
      <td>{key.upstreamProvider ?? "—"}</td>
      <td>
        <Time iso={key.createdAt} />
      </td>
      <KeyUsageCell apiKey={key} />
      <KeyBudget apiKey={key} live={state === "live"} onChanged={onChanged} />
      <td>
        {state === "live" && (
          <div class="actions">
            <button
              type="button"
              aria-expanded={rotating}
              aria-label={`Rotate key ${key.prefix}`}
              onClick={() => setRotating(!rotating)}
            >
              Rotate…
            </button>
            <button
              type="button"
              class="danger"
              disabled={busy}
              aria-label={`Revoke key ${key.prefix}`}
              onClick={revoke}
            >
              Revoke
            </button>
          </div>
        )}
        {rotating && state === "live" && (
          <form class="confirm" aria-label={`Rotate key ${key.prefix}`} onSubmit={rotate}>
            <label>
              The old secret keeps working for
              <select value={grace} onChange={(e) => setGrace(Number(e.currentTarget.value))}>
                {GRACE.map(([seconds, label]) => (
                  <option value={seconds}>{label}</option>
                ))}
              </select>
            </label>
            <div class="actions">
              <button type="submit" disabled={busy}>
                Rotate
              </button>
              <button type="button" onClick={() => setRotating(false)}>
                Cancel
              </button>
            </div>
          </form>
        )}
        <ErrorNote error={error} />
      </td>
    </tr>
  )
}

/**
 * A new key: namespace (when the console shows them all), scope, label, its own rate limit, an expiry,
 * and a provider key its requests go with (instead of the gateway's own), written once and never shown.
 */
const CreateKey = ({ onCreated }: { readonly onCreated: (key: CreatedKey) => void }) => {
  const [namespace, setNamespace] = useState("default")
  const [scope, setScope] = useState<KeyScope>("app")
  const [label, setLabel] = useState("")
  const [provider, setProvider] = useState<ProviderName | "">("")
  const [providerKey, setProviderKey] = useState("")
  const [limit, setLimit] = useState("")
  const [expires, setExpires] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Error | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const key = await request<CreatedKey>("POST", "/api/keys", {
        ...namespaceOf(namespace),
        scope,
        ...(label.trim() === "" ? {} : { label: label.trim() }),
        ...(provider === "" ? {} : { upstream: { provider, apiKey: providerKey.trim() } }),
        ...(limit === "" ? {} : { rateLimitPerMinute: Number(limit) }),
        // `datetime-local` is the browser's local time; the gateway takes an instant.
        ...(expires === "" ? {} : { expiresAt: new Date(expires).toISOString() })
      })
      setLabel("")
      setProvider("")
      setProviderKey("")
      setLimit("")
      setExpires("")
      onCreated(key)
    } catch (failure) {
      setError(failure as Error)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="new-key-title">
      <h2 id="new-key-title">New key</h2>
      <form onSubmit={submit}>
        <div class="row">
          <NamespaceField id="key-namespace" value={namespace} onInput={setNamespace} />
          <label>
            Scope
            <select value={scope} onChange={(e) => setScope(e.currentTarget.value as KeyScope)}>
              <option value="app">app: /v1 and /mcp</option>
              <option value="admin">admin: the management API</option>
            </select>
          </label>
          <label>
            Label (optional)
            <input maxLength={200} value={label} onInput={(e) => setLabel(e.currentTarget.value)} />
          </label>
          <label>
            Requests a minute (optional)
            <input
              type="number"
              min={1}
              max={1_000_000}
              step={1}
              inputMode="numeric"
              value={limit}
              onInput={(e) => setLimit(e.currentTarget.value)}
            />
          </label>
          <label>
            Expires (optional)
            <input type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
          </label>
        </div>
        <div class="row">
          <label>
            Provider key
            <select value={provider} onChange={(e) => setProvider(e.currentTarget.value as ProviderName | "")}>
              <option value="">the gateway's own</option>
              {PROVIDERS.map(([name, title]) => (
                <option value={name}>{title}: a key of its own</option>
              ))}
            </select>
          </label>
          {provider !== "" && (
            <label>
              {PROVIDERS.find(([name]) => name === provider)?.[1]} API key
              <input
                type="password"
                autocomplete="off"
                required
                maxLength={1000}
                value={providerKey}
                onInput={(e) => setProviderKey(e.currentTarget.value)}
              />
            </label>
          )}
        </div>
        <button type="submit" disabled={busy}>
          Create key
        </button>
        <ErrorNote error={error} />
      </form>
    </section>
  )
}
