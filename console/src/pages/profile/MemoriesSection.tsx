import { useState } from "preact/hooks"
import { MEMORY_TYPES, type Memory, type MemoryType, profilePath, type RankedMemory, request } from "../../api.ts"
import { Pager } from "../../components/Pager.tsx"
import { ErrorNote, Show } from "../../components/Status.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { ago, fixed, when } from "../../format.ts"

const PAGE = 50

/**
 * The memories, a page at a time (a profile may have thousands): as listed (importance × decay), or
 * ranked for a message exactly as injection ranks them. Superseded ones stay, greyed.
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
      <Show loaded={memories}>
        {({ memories, total }) => (
          <>
            {query !== "" && (
              <p class="muted">Ranked as injection ranks them for “{query}”; the relevant ones are marked.</p>
            )}
            <ul class="cards">
              {memories.map((memory) => (
                <MemoryCard key={memory.id} base={base} memory={memory} onChanged={reload} />
              ))}
            </ul>
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

const MemoryCard = (props: {
  readonly base: string
  readonly memory: Memory | RankedMemory
  readonly onChanged: () => void
}) => {
  const { base, memory, onChanged } = props
  const [editing, setEditing] = useState(false)
  const [content, setContent] = useState(memory.content)
  const [type, setType] = useState<MemoryType>(memory.type)
  const [importance, setImportance] = useState(String(memory.importance))
  const [error, setError] = useState<string | null>(null)
  const path = `${base}/${encodeURIComponent(memory.id)}`
  const save = async (event: Event) => {
    event.preventDefault()
    try {
      await request("PATCH", path, { content, type, importance: Number(importance) })
      setEditing(false)
      setError(null)
      onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const remove = async () => {
    if (!confirm(`Delete the memory “${memory.content.slice(0, 80)}”?`)) return
    try {
      await request("DELETE", path)
      onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  const ranked = "score" in memory ? memory : undefined
  return (
    <li class={memory.supersededBy === null ? "card" : "card superseded"} data-memory={memory.id}>
      {editing ? (
        <form onSubmit={save}>
          <label>
            Content <textarea value={content} onInput={(e) => setContent(e.currentTarget.value)} rows={3} />
          </label>
          <label>
            Type{" "}
            <select value={type} onChange={(e) => setType(e.currentTarget.value as MemoryType)}>
              {MEMORY_TYPES.map((name) => (
                <option value={name}>{name}</option>
              ))}
            </select>
          </label>
          <label>
            Importance{" "}
            <input
              type="number"
              min="0"
              max="1"
              step="0.05"
              value={importance}
              onInput={(e) => setImportance(e.currentTarget.value)}
            />
          </label>
          <button type="submit">Save</button>
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <p>{memory.content}</p>
      )}
      <ErrorNote error={error} />
      <p class="muted">
        {memory.type} · importance {fixed(memory.importance)} · decay {fixed(memory.decayFactor)} · created{" "}
        {when(memory.createdAt)} · last injected {ago(memory.lastAccessedAt)}
        {ranked === undefined ? "" : ` · score ${fixed(ranked.score, 3)}${ranked.relevant ? " · relevant" : ""}`}
        {memory.supersededBy === null ? "" : " · superseded"}
      </p>
      <div class="actions">
        {!editing && (
          <button type="button" onClick={() => setEditing(true)}>
            Edit
          </button>
        )}
        <button type="button" class="danger" onClick={remove}>
          Delete
        </button>
      </div>
    </li>
  )
}
