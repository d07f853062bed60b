/**
 * Usage report benchmark: how long `GET /api/usage` takes over a month of a busy namespace. The
 * usage's day sums are seeded the way the usage writer leaves them (a row per day, key, user, work
 * and model), then each grouping is asked for the 30 days, several times; the median is printed.
 *
 *   node bench/usageReport.ts                      # 30 days × 5,000 users × 4 keys × 3 models
 *   node bench/usageReport.ts --users 20000        # a larger namespace
 */
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { startBenchDatabase } from "./benchDatabase.ts"
import { freePort, root, startProcess, stop } from "./processes.ts"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(process.argv[index + 1])
}
const USERS = arg("users", 5000)
const DAYS = 30
const KEYS = 4
const MODELS = ["gpt-4o", "gpt-4o-mini", "claude-sonnet"]
const RUNS = 7
const ADMIN = "sk-admin-bench-usage-0123456789"

const log = (line: string) => process.stderr.write(`${line}\n`)

const db = await startBenchDatabase("usage")
const databaseUrl = await db.createDatabase("usage")
const port = await freePort()
const gateway = await startProcess(
  join(root, "src/main.ts"),
  {
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "warn",
    ADMIN_API_KEY: ADMIN,
    EXTRACTION_CONCURRENCY: "0",
    EMBEDDINGS: "off"
  },
  `http://127.0.0.1:${port}/ready`
)

try {
  // Each user talks to one key and one model a day; a tenth of the days also carry memory work.
  log(`seeding ${DAYS} days of ${USERS} users…`)
  await db.run(
    Effect.flatMap(
      PgClient.PgClient,
      (sql) => sql`
        INSERT INTO usage_daily (day, namespace, key_id, user_id, work, provider, model, requests, unreported,
                                 input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
                                 reasoning_tokens, injected_tokens, last_at)
        SELECT current_date - d, 'busy', 'key-' || (u % ${KEYS}), 'user-' || u, w.work, 'openai',
               (${MODELS})[1 + (u + d) % ${MODELS.length}], 12, 0, 24000, 16000, 0, 3000, 0, 1800,
               (current_date - d)::timestamptz
        FROM generate_series(0, ${DAYS - 1}) d, generate_series(1, ${USERS}) u,
             (VALUES ('app'), ('extraction')) w(work)
        WHERE w.work = 'app' OR (u + d) % 10 = 0`
    ),
    databaseUrl
  )
  const rows = await db.run(
    Effect.flatMap(PgClient.PgClient, (sql) => sql<{ count: string }>`SELECT count(*)::text AS count FROM usage_daily`),
    databaseUrl
  )
  await db.run(
    Effect.flatMap(PgClient.PgClient, (sql) => sql`ANALYZE usage_daily`),
    databaseUrl
  )
  const timeOf = async (groupBy: string) => {
    const times: Array<number> = []
    let groups = 0
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now()
      const response = await fetch(`http://127.0.0.1:${port}/api/usage?groupBy=${groupBy}`, {
        headers: { authorization: `Bearer ${ADMIN}`, "x-service-namespace": "busy" }
      })
      const body = (await response.json()) as { usage: Array<unknown> }
      times.push(performance.now() - started)
      groups = body.usage.length
    }
    times.sort((a, b) => a - b)
    return { median: times[Math.floor(RUNS / 2)]!, groups }
  }
  log("")
  console.log(`Usage report over ${DAYS} days of one namespace (${rows[0]!.count} day rows, ${USERS} users):`)
  console.log("")
  console.log("| groupBy | groups | median (ms) |")
  console.log("|---|---|---|")
  for (const groupBy of ["day", "key", "model", "work", "user"]) {
    const { median, groups } = await timeOf(groupBy)
    console.log(`| ${groupBy} | ${groups} | ${median.toFixed(1)} |`)
  }
} finally {
  await stop(gateway)
  await db.close()
}
