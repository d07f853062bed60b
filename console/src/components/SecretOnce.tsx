import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"

/**
 * A secret the gateway shows once (a new key, a webhook's signing secret): selectable, with a copy
 * button, and said plainly that it will not be shown again. Focus moves here when it appears, so a
 * screen reader reads it; it is kept in this component's state only, gone once dismissed.
 */
export const SecretOnce = (props: {
  readonly title: string
  /** The field's name, e.g. "New key". */
  readonly label: string
  readonly secret: string
  readonly onDone: () => void
  readonly children?: ComponentChildren
}) => {
  const { title, label, secret, onDone, children } = props
  const heading = useRef<HTMLHeadingElement>(null)
  const field = useRef<HTMLInputElement>(null)
  const [copied, setCopied] = useState("")
  useEffect(() => {
    heading.current?.focus()
    setCopied("")
  }, [secret])
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret)
      setCopied("Copied.")
    } catch {
      // No clipboard access (a page not served over HTTPS, or refused): the selected text, copied the old way.
      field.current?.select()
      setCopied(document.execCommand("copy") ? "Copied." : "Selected: copy it with your keyboard.")
    }
  }
  return (
    <section class="secret" aria-labelledby="secret-title" data-testid="secret-once">
      <h2 id="secret-title" tabIndex={-1} ref={heading}>
        {title}
      </h2>
      {children}
      <p>
        <strong>Copy it now: you will not see it again.</strong>
      </p>
      <div class="row">
        <label class="grow">
          {label}
          <input
            ref={field}
            class="secret-value"
            readOnly
            value={secret}
            spellcheck={false}
            autocomplete="off"
            onFocus={(e) => e.currentTarget.select()}
          />
        </label>
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p role="status" class="muted">
        {copied}
      </p>
      <button type="button" onClick={onDone}>
        Done, hide it
      </button>
    </section>
  )
}
