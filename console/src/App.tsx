import { useEffect, useState } from "preact/hooks"
import { forgetKey, onSignedOut, storedKey } from "./api.ts"
import { Jobs } from "./pages/Jobs.tsx"
import { Overview } from "./pages/Overview.tsx"
import { ProfileList } from "./pages/ProfileList.tsx"
import { ProfilePage } from "./pages/ProfilePage.tsx"
import { SignIn } from "./pages/SignIn.tsx"
import { href, type Route, useRoute } from "./router.ts"

const NAV: ReadonlyArray<readonly [Route["page"], string]> = [
  ["profiles", "Profiles"],
  ["jobs", "Jobs"],
  ["overview", "Overview"]
]

export const App = () => {
  const [signedIn, setSignedIn] = useState(() => storedKey() !== null)
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
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />
  const current = route.page === "profile" ? "profiles" : route.page
  return (
    <>
      <a class="skip" href="#content">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          {NAV.map(([page, label]) => (
            <a href={href({ page } as Route)} aria-current={current === page ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <div id="content" tabIndex={-1}>
        {route.page === "profile" ? (
          <ProfilePage id={route.id} tab={route.tab} />
        ) : route.page === "jobs" ? (
          <Jobs />
        ) : route.page === "overview" ? (
          <Overview />
        ) : (
          <ProfileList />
        )}
      </div>
    </>
  )
}
