import { useState } from "preact/hooks"
import { ApiError, request, storeKey } from "../api.ts"
import { ErrorNote } from "../components/Status.tsx"

/** Asks for the gateway's admin key once per tab; checks it before keeping it. */
export const SignIn = ({ onSignedIn }: { readonly onSignedIn: () => void }) => {
  const [key, setKey] = useState("")
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await request("GET", "/api/profiles?limit=1", undefined, key.trim())
      storeKey(key.trim())
      onSignedIn()
    } catch (failure) {
      setError(
        failure instanceof ApiError && (failure.status === 401 || failure.status === 403)
          ? "The gateway does not accept this key for its management API (use ADMIN_API_KEY, or SERVICE_API_KEY while no admin key is set)."
          : (failure as Error).message
      )
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin">
      <h1>Gateway console</h1>
      <form onSubmit={submit}>
        <label for="key">Admin key</label>
        <input
          id="key"
          type="password"
          autocomplete="current-password"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <p class="muted">Kept for this tab only. Leave it empty if the gateway runs without keys.</p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorNote error={error} />
      </form>
    </main>
  )
}
