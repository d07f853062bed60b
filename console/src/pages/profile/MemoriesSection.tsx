import { useState } from "preact/hooks"
import { MEMORY_TYPES, type Memory, type MemoryType, profilePath, type RankedMemory, request } from "../../api.ts"
import { Pager } from "../../components/Pager.tsx"
import { Show } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { AddMemory } from "./AddMemory.tsx"
import { MemoryTable } from "./MemoryTable.tsx"

const PAGE = 50

/**
 * The memories, a page at a time (a profile may have thousands): as listed (importance × decay), or
 * ranked for a message exactly as injection ranks them. Superseded ones stay, greyed. A memory can be
 * added by hand.
 */
export const MemoriesSection = ({ profileId }: { readonly profileId: string }) => {
  const [type, setType] = useState<MemoryType | "">("")
  const [offset, setOffset] = useState(0)
  const [typedQuery, setTypedQuery] = useState("")
  const [query, setQuery] = useState("")
  const base = `${profilePath(profileId)}/memories`
  const showAll = () => {
    setQuery("")
    setTypedQuery("")
  }
  const chooseType = (chosen: MemoryType | "") => {
    setType(chosen)
    setOffset(0)
  }
  const [memories, reload] = useLoad(
    () =>
      query === ""
        ? request<{ memories: ReadonlyArray<Memory>; total: number }>(
            "GET",
            `${base}?limit=${PAGE}&offset=${offset}${type === "" ? "" : `&type=${type}`}`
          )
        : request<{ memories: ReadonlyArray<RankedMemory> }>("POST", `${base}/search`, {
            query,
            limit: 100,
            ...(type === "" ? {} : { type })
          }).then(({ memories }) => ({ memories, total: memories.length })),
    [profileId, type, offset, query]
  )
  return (
    <>
      <h2>Memories</h2>
      {/* biome-ignore lint/a11y/useSemanticElements: Preact's JSX types have no <search> element; the role says the same */}
      <form
        class="row"
        role="search"
        onSubmit={(event) => {
          event.preventDefault()
          setQuery(typedQuery.trim())
          setOffset(0)
        }}
      >
        <label>
          Rank for a message{" "}
          <input type="search" value={typedQuery} onInput={(e) => setTypedQuery(e.currentTarget.value)} />
        </label>
        <button type="submit">Rank</button>
        {query !== "" && (
          <button type="button" onClick={showAll}>
            Show all
          </button>
        )}
        <label>
          Type{" "}
          <select value={type} onChange={(e) => chooseType(e.currentTarget.value as MemoryType | "")}>
            <option value="">all</option>
            {MEMORY_TYPES.map((name) => (
              <option value={name}>{name}</option>
            ))}
          </select>
        </label>
      </form>
      <AddMemory base={base} onAdded={reload} />
      <Show loaded={memories}>
        {({ memories, total }) => (
          <>
            {query !== "" && (
              <p class="muted">
                Ranked as injection ranks them for “{query}”: <em>injected</em> marks what a request with this message
                would carry, <em>relevant</em> what is above the relevance floor but left out by the token budget or the
                best scores.
              </p>
            )}
            {memories.length === 0 ? (
              <p class="muted">No memories{type === "" ? "" : ` of type ${type}`}.</p>
            ) : (
              <MemoryTable
                key={String(query !== "")}
                base={base}
                memories={memories}
                ranked={query !== ""}
                onChanged={reload}
              />
            )}
            {query === "" && (
              <Pager
                label="Memories"
                offset={offset}
                size={PAGE}
                shown={memories.length}
                total={total}
                onOffset={setOffset}
              />
            )}
          </>
        )}
      </Show>
    </>
  )
}
