/**
 * A minimal client for the inspector of a benchmarked process (started with
 * `NODE_OPTIONS=--inspect=127.0.0.1:<port>`): the benchmark profiles the process and reads its heap
 * after a forced GC through it, so the gateway needs no endpoint of its own for either.
 */

export interface Inspector {
  /** Sends one DevTools-protocol command and resolves with its result. */
  readonly send: <A>(method: string, params?: Record<string, unknown>) => Promise<A>
  readonly close: () => void
}

interface Reply {
  readonly id?: number
  readonly result?: unknown
  readonly error?: { readonly message: string }
}

export const connectInspector = async (port: number): Promise<Inspector> => {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    readonly webSocketDebuggerUrl: string
  }>
  const target = targets[0]
  if (target === undefined) throw new Error(`no inspector target on port ${port}`)
  const socket = new WebSocket(target.webSocketDebuggerUrl)
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true })
    socket.addEventListener("error", () => reject(new Error(`cannot connect to the inspector on port ${port}`)), {
      once: true
    })
  })
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>()
  socket.addEventListener("message", (event) => {
    const reply = JSON.parse(String(event.data)) as Reply
    if (reply.id === undefined) return // an event: none is subscribed to
    const waiter = pending.get(reply.id)
    pending.delete(reply.id)
    if (reply.error !== undefined) waiter?.reject(new Error(reply.error.message))
    else waiter?.resolve(reply.result)
  })
  let nextId = 1
  return {
    send: <A>(method: string, params: Record<string, unknown> = {}) =>
      new Promise<A>((resolve, reject) => {
        const id = nextId++
        pending.set(id, { resolve: (value) => resolve(value as A), reject })
        socket.send(JSON.stringify({ id, method, params }))
      }),
    close: () => socket.close()
  }
}

/** The process's `process.memoryUsage()` after two full collections (the second frees what finalizers released). */
export const memoryAfterGc = async (inspector: Inspector): Promise<NodeJS.MemoryUsage> => {
  await inspector.send("HeapProfiler.collectGarbage")
  await inspector.send("HeapProfiler.collectGarbage")
  const { result } = await inspector.send<{ result: { value: string } }>("Runtime.evaluate", {
    expression: "JSON.stringify(process.memoryUsage())",
    returnByValue: true
  })
  return JSON.parse(result.value) as NodeJS.MemoryUsage
}
