import { useEffect, useRef } from "preact/hooks"
import { profilePath, request, type ThreadMessage, type ThreadSummary } from "../../api.ts"
import { Show } from "../../components/Status.tsx"
import { ScrollTable, TableHead } from "../../components/Table.tsx"
import { Time } from "../../components/Time.tsx"
import { useLoad } from "../../components/useLoad.ts"
import { ago, when } from "../../format.ts"
import { href } from "../../router.ts"

/**
 * The threads the gateway keeps for this user's chat completions (`X-Service-Thread-Id`), the most
 * recently used first; one of them, opened from the list, with every message in order. The opened
 * thread is part of the address (`#/profiles/<id>/threads/<thread id>`): the browser's back button
 * returns to the list, and a thread can be bookmarked.
 */
export const ThreadsSection = (props: {
  readonly profileId: string
  /** The profile as the address names it (its id or external id), for the links. */
  readonly routeId: string
  readonly thread: string | undefined
}) => {
  const { profileId, routeId, thread } = props
  const link = (thread?: string) =>
    href({ page: "profile", id: routeId, tab: "threads", ...(thread === undefined ? {} : { thread }) })
  return thread === undefined ? (
    <ThreadList profileId={profileId} link={link} />
  ) : (
    <ThreadView profileId={profileId} thread={thread} back={link()} />
  )
}

/** Where focus goes when what had it is gone (the link just followed): the new view's heading. */
const useFocusWhenLost = (deps: ReadonlyArray<unknown>) => {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    const active = document.activeElement
    if (active === null || active === document.body || !active.isConnected) heading.current?.focus()
  }, deps)
  return heading
}

const ThreadList = (props: { readonly profileId: string; readonly link: (thread: string) => string }) => {
  const { profileId, link } = props
  const heading = useFocusWhenLost([])
  const [threads, reload] = useLoad(
    () => request<{ threads: ReadonlyArray<ThreadSummary> }>("GET", `${profilePath(profileId)}/threads`),
    [profileId]
  )
  return (
    <>
      <div class="row spread">
        <h2 id="threads-title" tabIndex={-1} ref={heading}>
          Threads
        </h2>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <Show loaded={threads}>
        {({ threads }) =>
          threads.length === 0 ? (
            <p class="muted">
              No threads yet. A chat completion sent with an <code>X-Service-Thread-Id</code> header is kept in that
              thread, and listed here.
            </p>
          ) : (
            <ScrollTable caption="Threads of this profile">
              <TableHead columns={["Thread", "Messages", "First used", "Last used"]} />
              <tbody>
                {threads.map((thread) => (
                  <tr key={thread.threadId} data-thread={thread.threadId}>
                    <th scope="row" class="wrap">
                      <a href={link(thread.threadId)}>{thread.threadId}</a>
                    </th>
                    <td data-messages>{thread.messages}</td>
                    <td>
                      <time dateTime={thread.firstAt}>{when(thread.firstAt)}</time>
                    </td>
                    <td>
                      <Time iso={thread.lastAt} text={ago} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </ScrollTable>
          )
        }
      </Show>
    </>
  )
}

const ThreadView = (props: { readonly profileId: string; readonly thread: string; readonly back: string }) => {
  const { profileId, thread, back } = props
  const heading = useFocusWhenLost([thread])
  const [loaded, reload] = useLoad(
    () =>
      request<{ threadId: string; messages: ReadonlyArray<ThreadMessage> }>(
        "GET",
        `${profilePath(profileId)}/threads/${encodeURIComponent(thread)}`
      ),
    [profileId, thread]
  )
  return (
    <>
      <p>
        <a href={back}>← All threads</a>
      </p>
      <div class="row spread">
        <h2 id="thread-title" tabIndex={-1} ref={heading}>
          Thread <span class="wrap">{thread}</span>
        </h2>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <Show loaded={loaded}>
        {({ messages }) => (
          <>
            <p class="muted">
              {messages.length} {messages.length === 1 ? "message" : "messages"}, oldest first
              {messages.length > 0 && (
                <>
                  {" "}
                  · {when(messages[0]!.createdAt)} to {when(messages.at(-1)!.createdAt)}
                </>
              )}
            </p>
            <ol class="turns" aria-labelledby="thread-title">
              {messages.map((message) => (
                <li key={message.id} class={`turn ${message.role}`} data-message-role={message.role}>
                  <p class="muted">
                    <strong class="role">{message.role}</strong> ·{" "}
                    <time dateTime={message.createdAt}>{when(message.createdAt)}</time>
                    {message.toolCallId !== null && (
                      <>
                        {" "}
                        · answers <code>{message.toolCallId}</code>
                      </>
                    )}
                  </p>
                  {message.content !== "" && <p class="content">{message.content}</p>}
                  <ToolCalls calls={message.toolCalls} />
                </li>
              ))}
            </ol>
          </>
        )}
      </Show>
    </>
  )
}

/** Longer arguments are cut here in the line; the whole call is one click away. */
const ARGUMENTS_SHOWN = 120

/** An assistant message's tool calls, one line each: `name(arguments)` and the call's id. */
const ToolCalls = ({ calls }: { readonly calls: unknown }) => {
  if (!Array.isArray(calls) || calls.length === 0) return null
  return (
    <ul class="tool-calls" aria-label="Tool calls">
      {calls.map((call: unknown, index) => {
        const { id, name, args, whole } = describeCall(call)
        const cut = args.length > ARGUMENTS_SHOWN
        return (
          <li key={id ?? index}>
            <code class="call">
              {name}({cut ? `${args.slice(0, ARGUMENTS_SHOWN)}…` : args})
            </code>
            {id !== null && <span class="muted"> {id}</span>}
            {cut && (
              <details>
                <summary>Whole arguments</summary>
                <pre>{whole}</pre>
              </details>
            )}
          </li>
        )
      })}
    </ul>
  )
}

/**
 * A tool call in the OpenAI shape (`{ id, type, function: { name, arguments } }`): its arguments as
 * compact JSON for the line, indented for the whole (as sent when they are not JSON).
 */
const describeCall = (
  call: unknown
): { readonly id: string | null; readonly name: string; readonly args: string; readonly whole: string } => {
  const record = (typeof call === "object" && call !== null ? call : {}) as Record<string, unknown>
  const fn = (
    typeof record["function"] === "object" && record["function"] !== null ? record["function"] : {}
  ) as Record<string, unknown>
  const name =
    typeof fn["name"] === "string" ? fn["name"] : typeof record["type"] === "string" ? record["type"] : "call"
  const raw = fn["arguments"] ?? record["input"] ?? ""
  let value: unknown = raw
  if (typeof raw === "string") {
    try {
      value = raw === "" ? undefined : JSON.parse(raw)
    } catch {
      value = undefined
    }
  }
  const id = typeof record["id"] === "string" ? record["id"] : null
  if (value === undefined) return { id, name, args: String(raw), whole: String(raw) }
  return { id, name, args: JSON.stringify(value), whole: JSON.stringify(value, null, 2) }
}
