import { namespaceKey, storedNamespace } from "../api.ts"

/** What the gateway accepts as a namespace's name. */
export const NAMESPACE_PATTERN = "[a-z0-9][a-z0-9_\\-]{0,62}"

/**
 * Which namespace a form creates something in: typed while the console shows every namespace, else
 * the one chosen in the header (or the key's own), which the request is scoped to anyway.
 * `value` is what the form sends: `undefined` leaves it to the request's namespace.
 */
export const NamespaceField = (props: {
  readonly id: string
  readonly value: string
  readonly onInput: (value: string) => void
}) => {
  const chosen = storedNamespace()
  if (namespaceKey() || chosen !== null) {
    return (
      <p class="muted">
        {chosen === null ? (
          "In this key's namespace."
        ) : (
          <>
            In namespace <strong>{chosen}</strong> (switch it in the header).
          </>
        )}
      </p>
    )
  }
  return (
    <label for={props.id}>
      Namespace
      <input
        id={props.id}
        required
        pattern={NAMESPACE_PATTERN}
        title="1–63 lowercase letters, digits, - or _, starting with a letter or digit"
        autocapitalize="off"
        spellcheck={false}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
    </label>
  )
}

/** The namespace a create request names: only when the console shows every namespace (else the header decides). */
export const namespaceOf = (typed: string): { readonly namespace?: string } =>
  namespaceKey() || storedNamespace() !== null ? {} : { namespace: typed.trim() }
