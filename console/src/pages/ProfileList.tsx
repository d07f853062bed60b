import { useEffect, useState } from "preact/hooks"
import { type ListedProfile, request, seesAllNamespaces } from "../api.ts"
import { Pager } from "../components/Pager.tsx"
import { Show } from "../components/Status.tsx"
import { ScrollTable, TableHead } from "../components/Table.tsx"
import { useLoad } from "../components/useLoad.ts"
import { ago } from "../format.ts"
import { href } from "../router.ts"

const PAGE = 20

/** Every profile (of the namespace chosen, or of all: then each says its namespace), newest first, found by part of its external id. */
export const ProfileList = () => {
  const all = seesAllNamespaces()
  const [typed, setTyped] = useState("")
  const [search, setSearch] = useState("")
  const [offset, setOffset] = useState(0)
  // Searched a moment after the typing stops.
  useEffect(() => {
    const timer = setTimeout(() => {
      setSearch(typed.trim())
      setOffset(0)
    }, 250)
    return () => clearTimeout(timer)
  }, [typed])
  const [page] = useLoad(
    () =>
      request<{ profiles: ReadonlyArray<ListedProfile>; total: number }>(
        "GET",
        `/api/profiles?limit=${PAGE}&offset=${offset}${search === "" ? "" : `&search=${encodeURIComponent(search)}`}`
      ),
    [search, offset]
  )
  return (
    <main>
      <h1>Profiles</h1>
      <label for="search">Find by external id</label>
      <input id="search" type="search" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
      <Show loaded={page}>
        {({ profiles, total }) => (
          <>
            <ScrollTable class="profiles" caption="Profiles">
              {/* The namespace under the id, not a column of its own: the list then fits a phone's width. */}
              <TableHead
                columns={[
                  all ? "External id · namespace" : "External id",
                  "Traits",
                  "Memories",
                  "Messages",
                  "Last activity"
                ]}
              />
              <tbody>
                {profiles.map((profile) => (
                  <tr key={profile.id}>
                    <th scope="row">
                      <a href={href({ page: "profile", id: profile.id })}>{profile.externalId}</a>
                      {all && <span class="namespace-of">{profile.namespace}</span>}
                    </th>
                    <td>{profile.counts.traits}</td>
                    <td>{profile.counts.memories}</td>
                    <td>{profile.counts.messages}</td>
                    <td>{ago(profile.lastActivityAt ?? profile.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </ScrollTable>
            <Pager
              label="Profiles"
              offset={offset}
              size={PAGE}
              shown={profiles.length}
              total={total}
              onOffset={setOffset}
            />
          </>
        )}
      </Show>
    </main>
  )
}
