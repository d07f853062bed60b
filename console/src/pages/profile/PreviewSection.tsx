import { useState } from "preact/hooks"
import { type Preview, profilePath, request } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"

/** A message typed as this user, and exactly what the proxy would inject for it, without calling any provider. */
export const PreviewSection = ({ profileId }: { readonly profileId: string }) => {
  const [message, setMessage] = useState("")
  const [preview, setPreview] = useState<Preview | null>(null)
  const [error, setError] = useState<Error | null>(null)
  const run = async (event: Event) => {
    event.preventDefault()
    setError(null)
    try {
      setPreview(await request<Preview>("POST", `${profilePath(profileId)}/preview`, { message }))
    } catch (failure) {
      setError(failure as Error)
    }
  }
  return (
    <>
      <h2>What would be injected</h2>
      <form onSubmit={run}>
        <label for="preview-message">A message from this user</label>
        <textarea
          id="preview-message"
          rows={3}
          value={message}
          onInput={(e) => setMessage(e.currentTarget.value)}
          required
        />
        <button type="submit">Preview</button>
      </form>
      <ErrorNote error={error} />
      {preview?.refusal != null && (
        <p class="error" role="status">
          The proxy would refuse this request: {preview.refusal.status} {preview.refusal.code}:{" "}
          {preview.refusal.message}
        </p>
      )}
      {preview !== null && preview.receipt !== null && (
        <>
          <h3>The block</h3>
          {preview.context === null ? (
            <p class="muted">Nothing would be injected.</p>
          ) : (
            <pre class="block" data-testid="preview-block">
              {preview.context}
            </pre>
          )}
          <h3>
            The receipt (<code>X-Service-Context</code>)
          </h3>
          <pre data-testid="preview-receipt">{JSON.stringify(preview.receipt, null, 2)}</pre>
        </>
      )}
    </>
  )
}
