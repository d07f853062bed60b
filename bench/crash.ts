/**
 * Crash benchmark: are answered turns ever lost? 200 simulated users (half returning, half new;
 * every other one streaming) talk to the gateway on its embedded PostgreSQL, 5 turns each; the
 * gateway is killed with SIGKILL at a random moment (when 20–80% of the turns are answered),
 * restarted on the same data, and every turn a client received in full is looked for in its
 * user's export. Several rounds on the same data.
 *
 *   npm run bench:crash                 # 5 rounds, writes bench/results/crash.{json,md}
 *   npm run bench:crash -- --rounds 2   # fewer rounds
 */
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AnsweredTurn, checkStored, runUsers } from "./answeredTurns.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, freePort, root, startProcess, stop } from "./processes.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(process.argv[index + 1])
}
const rounds = arg("rounds", 5)
const USERS = 200
const TURNS = 5

const mock = await startMockUpstream()
const dataDir = await mkdtemp(join(tmpdir(), "gateway-crash-"))
await chmod(dataDir, 0o755)
const port = await freePort()
const env = {
  PORT: String(port),
  HOST: "127.0.0.1",
  DATA_DIR: dataDir,
  UPSTREAM_BASE_URL: `${mock.url}/v1`,
  UPSTREAM_API_KEY: "sk-bench",
  LOG_LEVEL: "warn",
  EXTRACTION_CONCURRENCY: "0",
  EMBEDDINGS: "off"
}
const baseUrl = `http://127.0.0.1:${port}`
const start = () =>
  startProcess(join(root, "src/main.ts"), env, `${baseUrl}/ready`, (text) => process.stderr.write(text))

interface Round {
  readonly round: number
  readonly killedAt: number
  readonly answered: number
  readonly streamed: number
  readonly missing: number
  readonly duplicated: number
}

const results: Array<Round> = []
const allAnswered: Array<AnsweredTurn> = []
for (let round = 1; round <= rounds; round++) {
  const gateway = await start()
  const killAt = Math.round(USERS * TURNS * (0.2 + Math.random() * 0.6))
  const userIds = Array.from({ length: USERS }, (_, i) => (i % 2 === 0 ? `returning-${i}` : `new-${round}-${i}`))
  const answered = await runUsers({
    baseUrl,
    userIds,
    turnsPerUser: TURNS,
    onAnswered: (count) => {
      if (count === killAt) gateway.kill("SIGKILL")
    }
  })
  if (gateway.exitCode === null && gateway.signalCode === null)
    await new Promise((resolve) => gateway.once("exit", resolve))
  allAnswered.push(...answered)
  const restarted = await start()
  const check = await checkStored(baseUrl, answered)
  await stop(restarted)
  const round_: Round = {
    round,
    killedAt: killAt,
    answered: answered.length,
    streamed: answered.filter((turn) => turn.streamed).length,
    missing: check.missing.length,
    duplicated: check.duplicated.length
  }
  results.push(round_)
  console.log(
    `round ${round}: killed after ${killAt} answered; ${answered.length} answered (${round_.streamed} streamed), ` +
      `${round_.missing} missing, ${round_.duplicated} duplicated`
  )
}

// Last, every round's turns again: later crashes must not have lost earlier turns.
const final = await start()
const overall = await checkStored(baseUrl, allAnswered)
await stop(final)
await mock.close()
await rm(dataDir, { recursive: true, force: true })

const summary = {
  commit,
  date: new Date().toISOString(),
  users: USERS,
  turnsPerUser: TURNS,
  rounds: results,
  overall: { answered: allAnswered.length, missing: overall.missing.length, duplicated: overall.duplicated.length }
}
const table = [
  `Crash benchmark (\`npm run bench:crash\`), commit ${commit}, ${summary.date.slice(0, 10)}: ${USERS} users × ${TURNS} turns per round,`,
  "gateway killed with SIGKILL at a random point, restarted on the same embedded PostgreSQL.",
  "",
  "| Round | Killed after | Answered turns | Streamed | Missing after restart | Stored twice |",
  "|---|---|---|---|---|---|",
  ...results.map(
    (r) => `| ${r.round} | ${r.killedAt} | ${r.answered} | ${r.streamed} | ${r.missing} | ${r.duplicated} |`
  ),
  `| all rounds, rechecked at the end | | ${allAnswered.length} | | ${overall.missing.length} | ${overall.duplicated.length} |`,
  ""
].join("\n")
await writeFile(join(root, "bench/results/crash.json"), `${JSON.stringify(summary, null, 2)}\n`)
await writeFile(join(root, "bench/results/crash.md"), table)
console.log(`\n${table}`)
process.exit(overall.missing.length === 0 && overall.duplicated.length === 0 ? 0 : 1)
