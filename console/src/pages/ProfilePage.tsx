import { useState } from "preact/hooks"
import { type Profile, profilePath, request, seesAllNamespaces } from "../api.ts"
import { ErrorNote, Show } from "../components/Status.tsx"
import { panelId, Tabs, tabId } from "../components/Tabs.tsx"
import { useLoad } from "../components/useLoad.ts"
import { when } from "../format.ts"
import { href } from "../router.ts"
import { MemoriesSection } from "./profile/MemoriesSection.tsx"
import { PreviewSection } from "./profile/PreviewSection.tsx"
import { SummarySection } from "./profile/SummarySection.tsx"
import { ThreadsSection } from "./profile/ThreadsSection.tsx"
import { TraitsSection } from "./profile/TraitsSection.tsx"
import { TurnsSection } from "./profile/TurnsSection.tsx"

const TABS = [
  ["summary", "Summary"],
  ["traits", "Traits"],
  ["memories", "Memories"],
  ["preview", "What would be injected"],
  ["turns", "Recent turns"],
  ["threads", "Threads"]
] as const
type Tab = (typeof TABS)[number][0]

const isTab = (name: string | undefined): name is Tab => TABS.some(([tab]) => tab === name)

/** One profile: its summary, traits, memories, what a message would get injected, its recent turns, its threads. */
export const ProfilePage = ({
  id,
  tab: linked,
  thread
}: {
  readonly id: string
  readonly tab: string | undefined
  /** The thread opened on the threads tab (`#/profiles/<id>/threads/<thread id>`). */
  readonly thread: string | undefined
}) => {
  // The section is part of the address (`#/profiles/<id>/memories`): it can be bookmarked and shared.
  const tab: Tab = isTab(linked) ? linked : "summary"
  const setTab = (next: Tab) => location.replace(href({ page: "profile", id, tab: next }))
  const [profile] = useLoad(() => request<{ profile: Profile }>("GET", profilePath(id)), [id])
  return (
    <main>
      <p>
        <a href="#/profiles">← Profiles</a>
      </p>
      <Show loaded={profile}>
        {({ profile }) => (
          <>
            <h1>{profile.externalId}</h1>
            <p class="muted">
              {seesAllNamespaces() && (
                <>
                  Namespace <strong>{profile.namespace}</strong> ·{" "}
                </>
              )}
              Profile {profile.id} · created {when(profile.createdAt)} · updated {when(profile.updatedAt)}
            </p>
            <ProfileActions profile={profile} />
            <Tabs label="Profile sections" prefix="" tabs={TABS} selected={tab} onSelect={setTab} />
            <section role="tabpanel" id={panelId("", tab)} aria-labelledby={tabId("", tab)}>
              {tab === "summary" ? (
                <SummarySection profile={profile} />
              ) : tab === "traits" ? (
                <TraitsSection profileId={profile.id} />
              ) : tab === "memories" ? (
                <MemoriesSection profileId={profile.id} />
              ) : tab === "preview" ? (
                <PreviewSection profileId={profile.id} />
              ) : tab === "turns" ? (
                <TurnsSection profileId={profile.id} />
              ) : (
                <ThreadsSection profileId={profile.id} routeId={id} thread={thread} />
              )}
            </section>
          </>
        )}
      </Show>
    </main>
  )
}

/** Export (a JSON download) and erase (after typing the external id back). */
const ProfileActions = ({ profile }: { readonly profile: Profile }) => {
  const [confirming, setConfirming] = useState(false)
  const [typed, setTyped] = useState("")
  const [error, setError] = useState<Error | null>(null)
  const exportProfile = async () => {
    setError(null)
    try {
      const data = await request<unknown>("GET", `${profilePath(profile.id)}/export`)
      const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }))
      const link = document.createElement("a")
      link.href = url
      link.download = `profile-${profile.externalId}.json`
      link.click()
      URL.revokeObjectURL(url)
    } catch (failure) {
      setError(failure as Error)
    }
  }
  const erase = async (event: Event) => {
    event.preventDefault()
    try {
      await request("DELETE", profilePath(profile.id))
      location.hash = "#/profiles"
    } catch (failure) {
      setError(failure as Error)
    }
  }
  return (
    <div class="actions">
      <button type="button" onClick={exportProfile}>
        Export
      </button>
      <button type="button" class="danger" onClick={() => setConfirming(true)}>
        Erase…
      </button>
      {confirming && (
        <form class="confirm" aria-labelledby="erase-title" onSubmit={erase}>
          <p id="erase-title">
            Erase <strong>{profile.externalId}</strong> with all its traits, memories and messages? This cannot be
            undone.
          </p>
          <label for="erase-confirm">Type the external id to confirm</label>
          {/* biome-ignore lint/a11y/noAutofocus: the confirmation the operator just asked for; its one field takes the typing */}
          <input id="erase-confirm" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autoFocus />
          <button type="submit" class="danger" disabled={typed !== profile.externalId}>
            Erase {profile.externalId}
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </form>
      )}
      <ErrorNote error={error} />
    </div>
  )
}
