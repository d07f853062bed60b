import { useState } from "preact/hooks"
import { type Namespace, namespaceKey, request, storedKey, storedNamespace } from "../api.ts"
import { NAMESPACE_PATTERN } from "../components/NamespaceField.tsx"
import { Show } from "../components/Status.tsx"
import { useLoad } from "../components/useLoad.ts"
import { SettingsEditor } from "./settings/SettingsEditor.tsx"
import { type NamespaceSettings, settingsPath } from "./settings/settingsForm.ts"
import "./settings/settings.css"

/**
 * A namespace's settings: how its users' turns are learned from (extraction instructions, memory
 * categories, its own trait schema) and how long what it learns is kept (retention), with when they were
 * saved and what the latest retention sweep removed. The namespace is the one chosen in the header, the
 * key's own, or (while the console shows every namespace) one named here, `default` at first.
 */
export const Settings = () => {
  const chosen = storedNamespace()
  return (
    <main>
      <h1>Settings</h1>
      {namespaceKey() ? <OwnNamespace /> : chosen !== null ? <NamespaceSettingsOf namespace={chosen} /> : <Picked />}
    </main>
  )
}

/** A namespace's own admin key: the one namespace it sees. */
const OwnNamespace = () => {
  const [listed] = useLoad(
    () => request<{ namespaces: ReadonlyArray<Namespace> }>("GET", "/api/namespaces", undefined, storedKey(), null),
    []
  )
  return (
    <Show loaded={listed}>
      {({ namespaces }) =>
        namespaces[0] === undefined ? (
          <p class="muted">This key sees no namespace.</p>
        ) : (
          <NamespaceSettingsOf namespace={namespaces[0].name} />
        )
      }
    </Show>
  )
}

/** The global admin, across every namespace: names the one to configure. */
const Picked = () => {
  const [typed, setTyped] = useState("default")
  const [namespace, setNamespace] = useState("default")
  return (
    <>
      <form
        class="row"
        aria-label="Choose a namespace"
        onSubmit={(e) => {
          e.preventDefault()
          setNamespace(typed.trim())
        }}
      >
        <label>
          Settings of namespace
          <input
            required
            pattern={NAMESPACE_PATTERN}
            title="1–63 lowercase letters, digits, - or _, starting with a letter or digit"
            autocapitalize="off"
            spellcheck={false}
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Open</button>
      </form>
      <p class="muted">Or choose a namespace in the header.</p>
      <NamespaceSettingsOf key={namespace} namespace={namespace} />
    </>
  )
}

/** One namespace's settings, loaded, then edited. */
const NamespaceSettingsOf = ({ namespace }: { readonly namespace: string }) => {
  const [settings] = useLoad(() => request<NamespaceSettings>("GET", settingsPath(namespace)), [namespace])
  return (
    <section aria-labelledby="settings-namespace">
      <h2 id="settings-namespace">
        Namespace <span class="wrap">{namespace}</span>
      </h2>
      <Show loaded={settings}>{(loaded) => <SettingsEditor key={loaded.namespace} initial={loaded} />}</Show>
    </section>
  )
}
