import { useEffect, useState } from "preact/hooks"
import {
  forgetKey,
  type Namespace,
  namespaceKey,
  onNamespacesChanged,
  onSignedOut,
  request,
  storedKey,
  storedNamespace,
  storeNamespace
} from "./api.ts"
import { useLoad } from "./components/useLoad.ts"
import { Jobs } from "./pages/Jobs.tsx"
import { Keys } from "./pages/Keys.tsx"
import { Overview } from "./pages/Overview.tsx"
import { ProfileList } from "./pages/ProfileList.tsx"
import { ProfilePage } from "./pages/ProfilePage.tsx"
import { Settings } from "./pages/Settings.tsx"
import { SignIn } from "./pages/SignIn.tsx"
import { Usage } from "./pages/Usage.tsx"
import { Webhooks } from "./pages/Webhooks.tsx"
import { href, type Route, useRoute } from "./router.ts"

const NAV: ReadonlyArray<readonly [Route["page"], string]> = [
  ["profiles", "Profiles"],
  ["jobs", "Jobs"],
  ["keys", "Keys"],
  ["webhooks", "Webhooks"],
  ["usage", "Usage"],
  ["settings", "Settings"],
  ["overview", "Overview"]
]

export const App = () => {
  const [signedIn, setSignedIn] = useState(() => storedKey() !== null)
  const [namespace, setNamespace] = useState(storedNamespace)
  const route = useRoute()
  // A key that stops being accepted (rotated, or the gateway restarted with another) asks for it again.
  useEffect(
    () =>
      onSignedOut(() => {
        forgetKey()
        setSignedIn(false)
      }),
    []
  )
  const signOut = () => {
    forgetKey()
    setSignedIn(false)
  }
  if (!signedIn)
    return (
      <SignIn
        onSignedIn={() => {
          setNamespace(storedNamespace())
          setSignedIn(true)
        }}
      />
    )
  const switchTo = (next: string | null) => {
    storeNamespace(next)
    setNamespace(next)
    // A profile of one namespace is not found from another: back to the list.
    if (route.page === "profile") location.hash = href({ page: "profiles" })
  }
  const current = route.page === "profile" ? "profiles" : route.page
  // The metrics count every namespace's traffic: a namespace's own key may not read them.
  const nav = namespaceKey() ? NAV.filter(([page]) => page !== "overview") : NAV
  return (
    <>
      <a class="skip" href="#content">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          {nav.map(([page, label]) => (
            <a href={href({ page } as Route)} aria-current={current === page ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div class="header-end">
          <NamespaceSwitcher namespace={namespace} page={route.page} onSwitch={switchTo} />
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      {/* Everything below is loaded again in the namespace switched to. */}
      <div id="content" tabIndex={-1} key={namespace ?? ""}>
        {route.page === "profile" ? (
          // A page per profile: going straight to another profile's address (a bookmark, the history)
          // starts anew, rather than showing the previous profile until the next one has loaded and
          // loading its sections with it (the previous profile's id with the new address's thread).
          <ProfilePage key={route.id} id={route.id} tab={route.tab} thread={route.thread} />
        ) : route.page === "jobs" ? (
          <Jobs />
        ) : route.page === "keys" ? (
          <Keys />
        ) : route.page === "webhooks" ? (
          <Webhooks />
        ) : route.page === "overview" ? (
          <Overview />
        ) : route.page === "usage" ? (
          <Usage />
        ) : route.page === "settings" ? (
          <Settings />
        ) : (
          <ProfileList />
        )}
      </div>
    </>
  )
}

/**
 * The namespace every call is scoped to (`X-Service-Namespace`), for this tab. The environment's admin
 * key chooses among all of them ("All namespaces": no header); a namespace's own key has just its own.
 */
const NamespaceSwitcher = (props: {
  readonly namespace: string | null
  /** Listed again on every page change: apps create namespaces as they go. */
  readonly page: Route["page"]
  readonly onSwitch: (namespace: string | null) => void
}) => {
  const { namespace, page, onSwitch } = props
  // Listed unscoped, else the list would hold the chosen namespace only.
  const [listed, reload] = useLoad(
    () => request<{ namespaces: ReadonlyArray<Namespace> }>("GET", "/api/namespaces", undefined, storedKey(), null),
    [page]
  )
  useEffect(() => onNamespacesChanged(reload), [reload])
  const names = listed.state === "ready" ? listed.value.namespaces.map((n) => n.name) : []
  if (namespaceKey()) {
    return (
      <p class="namespace">
        Namespace <strong>{names[0] ?? "…"}</strong>
      </p>
    )
  }
  // The chosen one stays offered even when it holds nothing yet (a namespace exists once it has a profile or key).
  const options = namespace === null || names.includes(namespace) ? names : [namespace, ...names]
  return (
    <div class="namespace">
      <label for="namespace">Namespace</label>
      <select
        id="namespace"
        value={namespace ?? ""}
        onChange={(e) => onSwitch(e.currentTarget.value === "" ? null : e.currentTarget.value)}
      >
        <option value="">All namespaces</option>
        {options.map((name) => (
          <option value={name}>{name}</option>
        ))}
      </select>
    </div>
  )
}
