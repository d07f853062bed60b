/**
 * The memory search's round trip on conversation-sized profiles (`npm run bench:search`): LoCoMo's
 * held-out conversations (509–689 turns, each turn a memory, all embedded first), each question
 * asked once — a new text every time — through `POST /api/profiles/{id}/memories/search` of one
 * gateway with the defaults (the local model), sequentially, after a warm-up on a tuning
 * conversation. Beside the latency: whether the search waited for the model (the keywords alone were
 * not confident) and the gateway's CPU per search, the model's thread apart. Nothing else runs.
 *
 *   npm run bench:search             # about a minute; writes bench/results/search.md
 *   npm run bench:search -- --smoke  # two conversations' first questions: checks that it works
 */
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { startBenchDatabase } from "./benchDatabase.ts"
import { seedConversationProfile, waitForJobs } from "./conversationProfile.ts"
import { median, percentile } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, gatewayEnvironment, root, startProcess, stop, threadCpuMs } from "./processes.ts"
import { LOCOMO_HELDOUT, type LocomoConversation, loadLocomo, locomoAvailable } from "./recall/locomo.ts"

const smoke = process.argv.includes("--smoke")
if (!locomoAvailable()) throw new Error("bench:search needs ../shared/datasets/locomo")
const log = (line: string) => process.stdout.write(`${line}\n`)

const [warmUp, ...measured] = await loadLocomo(["26", ...(smoke ? LOCOMO_HELDOUT.slice(0, 1) : LOCOMO_HELDOUT)])
const database = await startBenchDatabase("search")
const mock = await startMockUpstream()
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const gateway = await startProcess(
  join(root, "src/main.ts"),
  {
    ...gatewayEnvironment(await database.createDatabase("search"), mock.url),
    // Searches back to back: the management API's per-client limit is not what is measured.
    RATE_LIMIT_API_PER_MINUTE: "0",
    PORT: String(port)
  },
  `${base}/health`
)
const externalIdOf = (conversation: LocomoConversation) => `locomo-${conversation.id}`
for (const conversation of [warmUp!, ...measured]) {
  await seedConversationProfile(base, conversation, {
    externalId: externalIdOf(conversation),
    size: conversation.memories.length
  })
}
await waitForJobs(base)

interface Search {
  readonly ms: number
  /** The search ranked without waiting for the message's vector. */
  readonly modelSkipped: boolean
}
const search = async (conversation: LocomoConversation, question: string): Promise<Search> => {
  const started = performance.now()
  const response = await fetch(`${base}/api/profiles/${externalIdOf(conversation)}/memories/search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: question, limit: 10, at: new Date(conversation.now).toISOString() })
  })
  const body = (await response.json()) as { retrieval: { semantic: string; unembedded: number } }
  const ms = performance.now() - started
  if (!response.ok) throw new Error(`search: ${response.status} ${JSON.stringify(body)}`)
  if (body.retrieval.unembedded > 0) throw new Error(`${body.retrieval.unembedded} memories have no vector yet`)
  return { ms, modelSkipped: body.retrieval.semantic === "not_needed" }
}

const questionsOf = (conversation: LocomoConversation) =>
  conversation.questions.slice(0, smoke ? 20 : undefined).map((q) => q.question)
for (const question of questionsOf(warmUp!)) await search(warmUp!, question)

/** The gateway's time waiting for query vectors so far: seconds summed and queries counted. */
const modelWait = async () => {
  const text = await (await fetch(`${base}/metrics`)).text()
  const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN)
  return {
    seconds: sample("gateway_embedding_query_seconds_sum"),
    count: sample("gateway_embedding_query_seconds_count")
  }
}

const rows: Array<string> = []
const all: Array<Search> = []
const waitBefore = await modelWait()
const cpuBefore = await threadCpuMs(gateway.pid!)
for (const conversation of measured) {
  const searches: Array<Search> = []
  for (const question of questionsOf(conversation)) searches.push(await search(conversation, question))
  all.push(...searches)
  rows.push(row(`${conversation.id} (${conversation.memories.length} memories)`, searches))
}
const cpuAfter = await threadCpuMs(gateway.pid!)
const waitAfter = await modelWait()
await stop(gateway)
await mock.close()
await database.close()

function row(label: string, searches: ReadonlyArray<Search>) {
  const ms = (of: ReadonlyArray<Search>) => of.map((s) => s.ms)
  const skipped = searches.filter((s) => s.modelSkipped)
  const waited = searches.filter((s) => !s.modelSkipped)
  const fmt = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : "–")
  return `| ${label} | ${searches.length} | ${fmt(median(ms(searches)))} | ${fmt(percentile(ms(searches), 90))} | ${Math.round((100 * skipped.length) / searches.length)}% | ${fmt(median(ms(skipped)))} | ${fmt(median(ms(waited)))} |`
}
const cpuPerSearch = (counted: (thread: string) => boolean) =>
  Object.entries(cpuAfter).reduce(
    (sum, [thread, ms]) => sum + (counted(thread) ? ms - (cpuBefore[thread] ?? 0) : 0),
    0
  ) / all.length

const table = [
  `Search round trip (\`npm run bench:search\`), commit ${commit}: LoCoMo's held-out conversations, every turn a memory (embedded), each question asked once, sequentially, limit 10, one gateway with the defaults. ms.`,
  "",
  "| Conversation | Searches | p50 | p90 | Model not waited for | p50 without the model | p50 with the model |",
  "|---|---|---|---|---|---|---|",
  ...rows,
  row("**all**", all),
  "",
  `Gateway CPU per search: ${cpuPerSearch(() => true).toFixed(2)} ms, of which the local model's thread ${cpuPerSearch((thread) => thread === "WorkerThread").toFixed(2)} ms. ` +
    `A query vector took ${((1000 * (waitAfter.seconds - waitBefore.seconds)) / (waitAfter.count - waitBefore.count)).toFixed(2)} ms on average, from the ask to the vector (\`gateway_embedding_query_seconds\`).`,
  ""
].join("\n")
log(`\n${table}`)
if (!smoke) await writeFile(join(root, "bench/results/search.md"), table)
