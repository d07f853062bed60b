/**
 * The provider's prompt cache, with and without the gateway. Providers bill a prompt prefix they have
 * just seen at a fraction of the price (OpenAI caches by itself, Anthropic at `cache_control`
 * breakpoints). A chat app resends its system prompt and whole history each turn, so nearly all of a
 * request repeats the one before; the gateway adds its context block, whose memories change with every
 * message, and whatever follows the block can no longer come from the cache.
 *
 * The conversation (bench/promptCacheConversation.ts): a system prompt of about 2,000 characters,
 * 20 turns, each a new user message about one of the user's 24 memories (seeded through
 * `POST /api/profiles/{id}/memories` for a fresh user per run), the answers from a scripted provider
 * (bench/promptCacheProvider.ts: 490–650 characters, made from the message alone, so the history is the
 * same with or without the gateway). The gateway runs as its own process on the embedded PostgreSQL,
 * extraction off, `EMBEDDINGS=off` unless set (`EMBEDDINGS=local npm run bench:cache`: the local model).
 *
 * What is measured, on each request as the provider got it (for a Responses request that continues a
 * `previous_response_id` the provider keeps: the conversation it rebuilds):
 *   the prompt as the provider renders it  bench/promptRendering.ts: the ordered list of the request's
 *                       parts (tools, system or instructions, each message or input item, as
 *                       `<|role|>\n<content>\n`), not its JSON: key order, whitespace, ids and a message's
 *                       form (a string or text parts; a Responses `input` string) are not prompt
 *   cached share        of request k: the longest prefix (in characters of that rendering) it shares with
 *                       request k−1, over its length: what the provider could serve from its cache; the
 *                       table gives the mean over turns 2–20 (turn 1 has no previous request) and the worst
 *   over-injection      on turn k: the uncached characters through the gateway, less those of the app
 *                       alone on the same turn, less the uncached characters of the context block(s) in
 *                       request k (found by their `<user_profile>` fence and preface; a message or item
 *                       holding only a block counts whole, framing included): what the block costs the
 *                       cache beyond itself. An earlier turn's block put back where it was is cached, so it
 *                       is not subtracted. Characters are bytes here (the text is ASCII)
 *   memory delivered    turns whose request holds the text of the memory the message is about
 *   breakpoint coverage Anthropic, gateway with INJECTION_CACHE_CONTROL=auto: the rendering up to the end
 *                       of the last content block carrying `cache_control`, over its length (turns 3–20)
 * Scenarios, each for INJECTION_PLACEMENT=system and =latest:
 *   (a) the app sends its whole history: Chat Completions, Anthropic Messages, Responses (input items)
 *   (b) Chat Completions with `X-Service-Thread-Id`: the app sends its system prompt and the new message,
 *       the gateway restores the thread; against the app sending its own history
 *   (c) Responses with `previous_response_id`, the state kept by the provider
 *       (UPSTREAM_RESPONSES_STATE=passthrough) or by the gateway (=gateway); against the app sending its
 *       own history
 *
 *   npm run bench:cache              # about 20 seconds
 *   npm run bench:cache -- --turns   # also each run's cached share turn by turn
 *   npm run bench:cache -- --dump /tmp/cache   # also each request as rendered, one file a turn
 *   npm run bench:cache -- --checkout /tmp/other   # another checkout's gateway, measured the same way
 *   npm run bench:cache -- --smoke   # 4 turns: checks that it works (no verdicts)
 */
import { mkdir, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { startBenchDatabase } from "./benchDatabase.ts"
import { commit, freePort, gatewayEnvironment, root, startProcess, stop } from "./processes.ts"
import { MEMORIES, MESSAGES, SYSTEM_PROMPT } from "./promptCacheConversation.ts"
import { answerTo, startPromptCacheProvider } from "./promptCacheProvider.ts"
import { type Api, cachedPrefix, injectedCharacters, type RenderedPrompt, renderPrompt } from "./promptRendering.ts"

const smoke = process.argv.includes("--smoke")
const perTurn = process.argv.includes("--turns")
/** `--checkout DIR`: the gateway of another checkout (e.g. a release, to compare), measured the same way. */
const checkout = process.argv.includes("--checkout")
  ? resolve(process.argv[process.argv.indexOf("--checkout") + 1]!)
  : root
/** `--dump DIR`: each request as rendered, one file a turn (`[cache_control]` marks a breakpoint's end). */
const dumpDir = process.argv.includes("--dump") ? process.argv[process.argv.indexOf("--dump") + 1] : undefined
const TURNS = smoke ? 4 : MESSAGES.length
const EMBEDDINGS = process.env["EMBEDDINGS"] ?? "off"
const PLACEMENTS = ["system", "latest"] as const
type Placement = (typeof PLACEMENTS)[number]
const MODEL = "bench-model"

// Every turn new: a message or answer seen before would be measured as cached.
const script = MESSAGES.slice(0, TURNS).map(({ text }) => text)
if (new Set([...script, ...script.map(answerTo)]).size !== 2 * TURNS) throw new Error("a message or answer repeats")

const database = await startBenchDatabase("prompt-cache")
const provider = await startPromptCacheProvider()

/** The gateways: per placement, the defaults, the Responses state kept by the gateway, and Anthropic breakpoints. */
const VARIANTS = {
  defaults: {},
  gatewayState: { UPSTREAM_RESPONSES_STATE: "gateway" },
  cacheControl: { INJECTION_CACHE_CONTROL: "auto" }
} as const
type Variant = keyof typeof VARIANTS

const startGateway = async (placement: Placement, variant: Variant) => {
  const port = await freePort()
  const child = await startProcess(
    join(checkout, "src/main.ts"),
    {
      ...gatewayEnvironment(await database.createDatabase(`cache_${placement}_${variant.toLowerCase()}`), provider.url),
      PORT: String(port),
      ANTHROPIC_BASE_URL: `${provider.url}/v1`,
      ANTHROPIC_API_KEY: "sk-ant-bench",
      EMBEDDINGS,
      INJECTION_PLACEMENT: placement,
      ...VARIANTS[variant]
    },
    `http://127.0.0.1:${port}/health`
  )
  return { placement, variant, child, url: `http://127.0.0.1:${port}` }
}

const gateways = await Promise.all(
  PLACEMENTS.flatMap((placement) =>
    (Object.keys(VARIANTS) as Array<Variant>).map((variant) => startGateway(placement, variant))
  )
)
const gatewayFor = (placement: Placement, variant: Variant) =>
  gateways.find((gateway) => gateway.placement === placement && gateway.variant === variant)!

/** A fresh user with the 24 memories. */
const seedUser = async (base: string, name: string) => {
  const user = `${name}-${Math.random().toString(36).slice(2, 10)}`
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`)
  }
  await post("/api/profiles", { externalId: user })
  for (const memory of MEMORIES) await post(`/api/profiles/${user}/memories`, { ...memory, importance: 0.5 })
  return user
}

/** How the app talks: its whole history each turn, a thread the gateway keeps, or `previous_response_id`. */
type Mode = "history" | "thread" | "previousResponse"
const PATHS: Record<Api, string> = {
  chat: "/v1/chat/completions",
  messages: "/v1/messages",
  responses: "/v1/responses"
}

/** A 20-turn conversation; each turn's request as the provider renders it. */
const converse = async (base: string, api: Api, mode: Mode, user?: string) => {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...(user === undefined ? {} : { "x-service-id": user }),
    ...(mode === "thread" && user !== undefined ? { "x-service-thread-id": `thread-${user}` } : {}),
    ...(api === "messages" ? { "anthropic-version": "2023-06-01" } : {})
  }
  const history: Array<unknown> = []
  let previousId: string | undefined
  const prompts: Array<RenderedPrompt> = []
  for (const { text } of MESSAGES.slice(0, TURNS)) {
    const own = mode === "history" ? history : []
    const body =
      api === "chat"
        ? {
            model: MODEL,
            messages: [{ role: "system", content: SYSTEM_PROMPT }, ...own, { role: "user", content: text }]
          }
        : api === "messages"
          ? {
              model: MODEL,
              max_tokens: 1024,
              system: SYSTEM_PROMPT,
              messages: [...own, { role: "user", content: text }]
            }
          : mode === "previousResponse"
            ? {
                model: MODEL,
                instructions: SYSTEM_PROMPT,
                input: text,
                ...(previousId === undefined ? {} : { previous_response_id: previousId })
              }
            : { model: MODEL, instructions: SYSTEM_PROMPT, input: [...own, { role: "user", content: text }] }
    const response = await fetch(`${base}${PATHS[api]}`, { method: "POST", headers, body: JSON.stringify(body) })
    const answer = (await response.json()) as Record<string, unknown>
    if (!response.ok) throw new Error(`${api} ${mode} via ${base}: ${response.status} ${JSON.stringify(answer)}`)
    // What the app keeps of the turn, as the SDKs' examples do.
    const choice = (answer["choices"] as Array<{ message: { content: string } }> | undefined)?.[0]
    if (api === "chat")
      history.push({ role: "user", content: text }, { role: "assistant", content: choice!.message.content })
    else if (api === "messages")
      history.push({ role: "user", content: text }, { role: "assistant", content: answer["content"] })
    else history.push({ role: "user", content: text }, ...(answer["output"] as Array<unknown>))
    previousId = answer["id"] as string
    const received = provider.take()
    if (received.length !== 1 || received[0]!.api !== api)
      throw new Error(`expected one ${api} request at the provider, got ${received.map((r) => r.api).join(", ")}`)
    prompts.push(renderPrompt(api, received[0]!.body))
  }
  return prompts
}

interface TurnFigures {
  readonly cached: number
  readonly share: number
  readonly uncached: number
}

/** Turn k against turn k−1 (turn 1, index 0, has none). */
const cacheOf = (prompts: ReadonlyArray<RenderedPrompt>): Array<TurnFigures | undefined> =>
  prompts.map((prompt, k) => {
    if (k === 0) return undefined
    const cached = cachedPrefix(prompt, prompts[k - 1]!)
    return { cached, share: cached / prompt.text.length, uncached: prompt.text.length - cached }
  })

/** The mean cached share of turns 2 on. */
const meanShare = (prompts: ReadonlyArray<RenderedPrompt>) =>
  mean(cacheOf(prompts).flatMap((f) => (f === undefined ? [] : [f.share])))

const pct = (share: number) => `${(share * 100).toFixed(1)}%`
const bytes = (n: number) => n.toLocaleString("en-US")
const mean = (values: ReadonlyArray<number>) => values.reduce((sum, v) => sum + v, 0) / values.length

interface Row {
  readonly alone: number
  readonly gateway: number
  readonly worst: { readonly share: number; readonly turn: number }
  readonly overInjection: number
  readonly delivered: number
}

/**
 * Over-injection on each turn (none on turn 1): only the block characters past the cached prefix are
 * the injection's own cost; an earlier turn's block the gateway puts back where it was is cached, and
 * counting it would hide what the new one breaks.
 */
const overInjectionOf = (alone: ReadonlyArray<RenderedPrompt>, through: ReadonlyArray<RenderedPrompt>) => {
  const a = cacheOf(alone)
  return cacheOf(through).map((g, k) =>
    g === undefined ? undefined : g.uncached - a[k]!.uncached - injectedCharacters(through[k]!, g.cached)
  )
}

/** A gateway run against the app alone, turn by turn. */
const compare = (alone: ReadonlyArray<RenderedPrompt>, through: ReadonlyArray<RenderedPrompt>): Row => {
  const g = cacheOf(through)
  let worst = 1
  for (let k = 1; k < g.length; k++) if (g[k]!.share < g[worst]!.share) worst = k
  return {
    alone: meanShare(alone),
    gateway: meanShare(through),
    worst: { share: g[worst]!.share, turn: worst + 1 },
    overInjection: overInjectionOf(alone, through)[worst]!,
    delivered: through.filter((prompt, k) => prompt.text.includes(MEMORIES[MESSAGES[k]!.memory]!.content)).length
  }
}

/** The mean share of the prompt under a `cache_control` breakpoint, from the third turn on. */
const breakpointCoverage = (prompts: ReadonlyArray<RenderedPrompt>) =>
  mean(prompts.slice(2).map((prompt) => prompt.breakpointEnd / prompt.text.length))

// ---- the runs --------------------------------------------------------------------------------------

const alone = {
  chat: await converse(provider.url, "chat", "history"),
  messages: await converse(provider.url, "messages", "history"),
  responses: await converse(provider.url, "responses", "history"),
  previousResponse: await converse(provider.url, "responses", "previousResponse")
}

const through = async (placement: Placement, variant: Variant, api: Api, mode: Mode, name: string) => {
  const gateway = gatewayFor(placement, variant)
  return converse(gateway.url, api, mode, await seedUser(gateway.url, name))
}

const runs = []
for (const placement of PLACEMENTS) {
  runs.push({
    placement,
    chat: await through(placement, "defaults", "chat", "history", "chat"),
    messages: await through(placement, "defaults", "messages", "history", "messages"),
    messagesAuto: await through(placement, "cacheControl", "messages", "history", "messages-auto"),
    responses: await through(placement, "defaults", "responses", "history", "responses"),
    thread: await through(placement, "defaults", "chat", "thread", "thread"),
    providerState: await through(placement, "defaults", "responses", "previousResponse", "provider-state"),
    gatewayState: await through(placement, "gatewayState", "responses", "previousResponse", "gateway-state")
  })
}

for (const gateway of gateways) await stop(gateway.child)
await provider.close()
await database.close()

// ---- the tables --------------------------------------------------------------------------------------

/** A table row: its label cells, and the gateway run against the app alone. */
interface Compared {
  readonly label: string
  readonly alone: ReadonlyArray<RenderedPrompt>
  readonly through: ReadonlyArray<RenderedPrompt>
}

const tableRow = ({ label, alone: a, through: g }: Compared) => {
  const row = compare(a, g)
  return `| ${label} | ${pct(row.alone)} | ${pct(row.gateway)} | ${pct(row.worst.share)} (turn ${row.worst.turn}) | ${bytes(row.overInjection)} | ${row.delivered}/${TURNS} |`
}

const scenarioA = runs.flatMap(
  (run): Array<Compared> => [
    { label: `Chat Completions | ${run.placement}`, alone: alone.chat, through: run.chat },
    { label: `Anthropic Messages | ${run.placement}`, alone: alone.messages, through: run.messages },
    {
      label: `Anthropic Messages, INJECTION_CACHE_CONTROL=auto | ${run.placement}`,
      alone: alone.messages,
      through: run.messagesAuto
    },
    { label: `Responses | ${run.placement}`, alone: alone.responses, through: run.responses }
  ]
)
const scenarioB = runs.map((run): Compared => ({ label: run.placement, alone: alone.chat, through: run.thread }))
const scenarioC = runs.flatMap(
  (run): Array<Compared> => [
    {
      label: `the provider (UPSTREAM_RESPONSES_STATE=passthrough) | ${run.placement}`,
      alone: alone.responses,
      through: run.providerState
    },
    {
      label: `the gateway (UPSTREAM_RESPONSES_STATE=gateway) | ${run.placement}`,
      alone: alone.responses,
      through: run.gatewayState
    }
  ]
)

if (dumpDir !== undefined) {
  const all = [
    ...Object.entries(alone).map(([name, prompts]) => ({ label: `alone ${name}`, prompts })),
    ...[...scenarioA, ...scenarioB.map((c) => ({ ...c, label: `thread ${c.label}` })), ...scenarioC].map((c) => ({
      label: c.label,
      prompts: c.through
    }))
  ]
  for (const { label, prompts } of all) {
    const dir = join(dumpDir, label.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, ""))
    await mkdir(dir, { recursive: true })
    for (const [k, prompt] of prompts.entries())
      await writeFile(
        join(dir, `turn-${String(k + 1).padStart(2, "0")}.txt`),
        prompt.breakpointEnd === 0
          ? prompt.text
          : `${prompt.text.slice(0, prompt.breakpointEnd)}[cache_control]${prompt.text.slice(prompt.breakpointEnd)}`
      )
  }
}

const turnByTurn = (
  label: string,
  prompts: ReadonlyArray<RenderedPrompt>,
  baseline?: ReadonlyArray<RenderedPrompt>
) => {
  const shares = cacheOf(prompts).map((f, k) => (f === undefined ? `[${prompts[k]!.text.length}]` : pct(f.share)))
  const over = baseline === undefined ? [] : overInjectionOf(baseline, prompts).slice(1)
  return [
    `${label}: ${shares.join(" ")}`,
    ...(over.length === 0 ? [] : [`  over-injection: ${over.map((n) => bytes(n!)).join(" ")}`])
  ]
}

const columns =
  "cached share, app sending its own history | through the gateway | worst turn | over-injection, worst turn (bytes) | memory delivered"
const lines = [
  `Prompt cache through the gateway — ${checkout === root ? `commit ${commit}` : checkout}, EMBEDDINGS=${EMBEDDINGS}, ${TURNS} turns${smoke ? " (smoke)" : ""}: ` +
    `a system prompt of ${SYSTEM_PROMPT.length} characters, ${MEMORIES.length} memories, a new message each turn. ` +
    "Cached share: the prefix a request shares with the one before, in characters of the prompt as the provider renders it, " +
    `mean of turns 2–${TURNS} (turn 1 has no previous request). Over-injection on the gateway's worst turn: its uncached ` +
    "bytes less the app's alone, less the uncached bytes of the context block(s).",
  "",
  "(a) The app sends its whole history each turn",
  "",
  "| API | INJECTION_PLACEMENT | cached share, app alone | through the gateway | worst turn | over-injection, worst turn (bytes) | memory delivered |",
  "|---|---|---|---|---|---|---|",
  ...scenarioA.map(tableRow),
  "",
  `Anthropic: the share of the prompt under a \`cache_control\` breakpoint, mean of turns 3–${TURNS} (the app sets none)`,
  "",
  "| INJECTION_PLACEMENT | app alone | through the gateway | through the gateway, INJECTION_CACHE_CONTROL=auto |",
  "|---|---|---|---|",
  ...runs.map(
    (run) =>
      `| ${run.placement} | ${pct(breakpointCoverage(alone.messages))} | ${pct(breakpointCoverage(run.messages))} | ${pct(breakpointCoverage(run.messagesAuto))} |`
  ),
  "",
  "(b) Chat Completions with X-Service-Thread-Id: the app sends its system prompt and the new message, the gateway restores the thread",
  "",
  `| INJECTION_PLACEMENT | ${columns} |`,
  "|---|---|---|---|---|---|",
  ...scenarioB.map(tableRow),
  "",
  "(c) Responses with previous_response_id: the app sends its instructions and the new message",
  "",
  `| state kept by | INJECTION_PLACEMENT | ${columns} |`,
  "|---|---|---|---|---|---|---|",
  ...scenarioC.map(tableRow),
  "",
  `The app alone with previous_response_id, the provider keeping the state: ${pct(meanShare(alone.previousResponse))} ` +
    `(sending its own history: ${pct(meanShare(alone.responses))}).`,
  "",
  ...(perTurn
    ? [
        "Turn by turn: cached share (turn 1: [its length in characters]), and over-injection (bytes) from turn 2",
        "",
        ...Object.entries(alone).flatMap(([name, prompts]) => turnByTurn(`app alone, ${name}`, prompts)),
        ...[...scenarioA, ...scenarioB.map((c) => ({ ...c, label: `thread | ${c.label}` })), ...scenarioC].flatMap(
          (c) => turnByTurn(c.label, c.through, c.alone)
        ),
        ""
      ]
    : [])
]
process.stdout.write(`${lines.join("\n")}\n`)
