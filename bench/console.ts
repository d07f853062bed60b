/**
 * How fast the console shows a big profile: a gateway (`node src/main.ts` on an embedded PostgreSQL)
 * with a profile of 10,000 memories, Debian's Chromium driven by Playwright. Each round opens the
 * profile's memories (`#/profiles/<id>/memories`) from a fresh page load and times, in the browser,
 * from the start of the navigation until the first page of memories (50) is on screen.
 *
 *   npm run bench:console              # 10 rounds after a warm-up; needs chromium (apt-get install chromium)
 *   npm run bench:console -- --smoke   # 2 rounds: checks that it works
 */
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { chromium } from "playwright-core"
import { startBenchDatabase } from "./benchDatabase.ts"
import { median, percentile } from "./loader.ts"
import { commit, freePort, root, startProcess, stop } from "./processes.ts"

const smoke = process.argv.includes("--smoke")
const ROUNDS = smoke ? 2 : 10
const MEMORIES = 10_000
const ADMIN_KEY = "sk-bench-console"

const database = await startBenchDatabase("console")
const databaseUrl = database.url
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const gateway = await startProcess(
  join(root, "src/main.ts"),
  {
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    PORT: String(port),
    ADMIN_API_KEY: ADMIN_KEY,
    EMBEDDINGS: "off",
    EXTRACTION_CONCURRENCY: "0",
    LOG_LEVEL: "warn"
  },
  `${base}/health`
)

const created = await fetch(`${base}/api/profiles`, {
  method: "POST",
  headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
  body: JSON.stringify({ externalId: "hoarder" })
})
if (!created.ok) throw new Error(`could not create the profile: ${created.status}`)
await database.run(
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    yield* sql.unsafe(
      `INSERT INTO memories (profile_id, content, type, importance)
       SELECT p.id, 'The user mentioned thing number ' || i || ' in a conversation about ' || (ARRAY['cooking','travel','work','music'])[1 + i % 4],
              (ARRAY['fact','preference','event','context'])[1 + i % 4], (i % 100) / 100.0
       FROM profiles p, generate_series(1, ${MEMORIES}) i WHERE p.external_id = 'hoarder'`
    )
  })
)

const browser = await chromium.launch({
  executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync"
  ]
})
const context = await browser.newContext()
await context.addInitScript((key) => sessionStorage.setItem("gateway-console-key", key), ADMIN_KEY)
const page = await context.newPage()
const profileId = (
  (await (
    await fetch(`${base}/api/profiles?search=hoarder`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  ).json()) as {
    profiles: Array<{ id: string }>
  }
).profiles[0]!.id

const timings: Array<number> = []
for (let round = 0; round <= ROUNDS; round++) {
  await page.goto(`${base}/console/#/profiles/${profileId}/memories`)
  // Read in the page at the first frame that shows the 50 memories: the browser's clock from the navigation's start.
  const shown = await page.waitForFunction(
    () => document.querySelectorAll("[data-memory]").length === 50 && performance.now(),
    undefined,
    { polling: "raf" }
  )
  const ms = (await shown.jsonValue()) as number
  await page.getByText(`1–50 of ${MEMORIES}`).waitFor()
  if (round > 0) timings.push(ms)
}

await browser.close()
await stop(gateway)
await database.close()

process.stdout.write(
  [
    `Console, commit ${commit}: a profile with ${MEMORIES} memories, from a fresh page load to its first 50 memories on screen`,
    `(signed in; its memories' address, #/profiles/<id>/memories; ${ROUNDS} rounds after a warm-up, headless Chromium):`,
    `median ${median(timings).toFixed(0)} ms, slowest ${percentile(timings, 100).toFixed(0)} ms`,
    ""
  ].join("\n")
)
