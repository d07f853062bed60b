/**
 * Splits a V8 CPU profile (the inspector's `Profiler.stop` result, the `.cpuprofile` format) into
 * buckets by where the sampled code lives. Self time only: a sample counts once, for the function
 * on top of the stack. Functions without a script (V8 builtins such as JSON.parse, native bindings
 * such as a socket write) count for the nearest caller that has one: a write is Node's socket code,
 * a JSON.parse in our pipeline is ours.
 */

export interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
    readonly children?: ReadonlyArray<number>
  }>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export const BUCKETS = [
  "effect (node_modules/effect)",
  "@effect/platform-node, @effect/sql-pg",
  "Node HTTP, net, streams",
  "undici",
  "other Node internals",
  "garbage collection",
  "our code (src/)",
  "embedded model",
  "other dependencies",
  'native, unattributed (V8 "(program)")'
] as const
export type Bucket = (typeof BUCKETS)[number]

const NODE_IO =
  /^node:(_http_|http|https|net|stream|_stream_|dgram|dns|internal\/(http|net|streams|stream_base_commons|js_stream_socket|dns|socket_list|webstreams))/

/** The bucket of a script, by its URL. */
export const bucketOfUrl = (url: string, root: string): Bucket => {
  if (url.includes("/node_modules/effect/")) return "effect (node_modules/effect)"
  if (url.includes("/node_modules/@effect/")) return "@effect/platform-node, @effect/sql-pg"
  if (url.includes("/node_modules/undici/") || url.startsWith("node:internal/deps/undici")) return "undici"
  if (url.includes("/node_modules/@energetic-ai/") || url.includes("/node_modules/@tensorflow/"))
    return "embedded model"
  if (NODE_IO.test(url)) return "Node HTTP, net, streams"
  if (url.startsWith("node:")) return "other Node internals"
  if (url.includes("/node_modules/")) return "other dependencies"
  if (url.startsWith(`file://${root}src/`) || url.startsWith(`${root}src/`)) return "our code (src/)"
  return "other dependencies"
}

export interface ProfileSplit {
  /** Sampled time, in ms, of the sampled thread when it was not idle. */
  readonly busyMs: number
  readonly idleMs: number
  readonly buckets: Record<Bucket, number>
  /** The functions with the most self time. */
  readonly top: ReadonlyArray<{
    readonly name: string
    readonly where: string
    readonly bucket: Bucket
    readonly ms: number
  }>
}

export const splitProfile = (profile: CpuProfile, root: string, topCount = 15): ProfileSplit => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parentOf = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)

  /** The node whose script a sample is charged to: itself, or its nearest caller with a script. */
  const chargedTo = (id: number): number => {
    let current = id
    while (byId.get(current)?.callFrame.url === "" && parentOf.has(current)) current = parentOf.get(current)!
    return current
  }

  const selfUs = new Map<number, number>()
  // timeDeltas[i] is the time since the previous sample: the time until the next one belongs to sample i.
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0))
  }

  const buckets = Object.fromEntries(BUCKETS.map((bucket) => [bucket, 0])) as Record<Bucket, number>
  const functions = new Map<string, { name: string; where: string; bucket: Bucket; ms: number }>()
  let idleMs = 0
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!
    const ms = us / 1000
    const name = node.callFrame.functionName
    if (name === "(idle)") {
      idleMs += ms
      continue
    }
    let bucket: Bucket
    let where: string
    if (name === "(garbage collector)") [bucket, where] = ["garbage collection", ""]
    else if (name === "(program)") [bucket, where] = ['native, unattributed (V8 "(program)")', ""]
    else {
      const charged = byId.get(chargedTo(id))!.callFrame
      bucket = charged.url === "" ? 'native, unattributed (V8 "(program)")' : bucketOfUrl(charged.url, root)
      where =
        node.callFrame.url === ""
          ? `native, called from ${charged.functionName || "(anonymous)"}`
          : `${node.callFrame.url.replace(`file://${root}`, "").replace(/^.*\/node_modules\//, "")}:${node.callFrame.lineNumber + 1}`
    }
    buckets[bucket] += ms
    const key = `${name}@${where}`
    const entry = functions.get(key) ?? { name: name || "(anonymous)", where, bucket, ms: 0 }
    entry.ms += ms
    functions.set(key, entry)
  }
  const busyMs = Object.values(buckets).reduce((sum, ms) => sum + ms, 0)
  const top = [...functions.values()].sort((a, b) => b.ms - a.ms).slice(0, topCount)
  return { busyMs, idleMs, buckets, top }
}
