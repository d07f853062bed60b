import { mkdir } from "node:fs/promises"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchChromium, signedIn as signIn, violations } from "../support/browserConsole.ts"
import {
  answerNamingQuestion,
  completion,
  eventually,
  type FakeUpstream,
  startFakeUpstream
} from "../support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"

/**
 * The web console in a real browser: Debian's Chromium (`apt-get install chromium`) driven by
 * Playwright, against the real gateway on the run's embedded PostgreSQL. Screenshots of every page
 * are kept in `test-results/console/`.
 */

const SCREENSHOTS = "test-results/console"
const ADMIN_KEY = "sk-admin-console-test"
const APP_KEY = "sk-app-console-test"
const USER = "console-user"
/** A user with 31 memories. */
const DENSE_USER = "dense-user"
/** What the worker writes in `last_error` when it defers a job past the profile's hourly budget. */
const DEFERRAL_NOTE =
  "deferred: this profile started 120 extraction jobs in the last hour (EXTRACTION_JOBS_PER_PROFILE_PER_HOUR); it runs at run_after"
/** A user id found in both namespaces `a` and `b`. */
const SHARED_USER = "shared-user"
/** The namespace whose usage the console shows, and its app key (made by the usage test). */
const USAGE_NAMESPACE = "metered"
let usageKey: { readonly id: string; readonly key: string; readonly prefix: string }

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
/** The admin keys (held in the database) of namespaces `a` and `b`. */
const namespaceAdmins: Record<string, string> = {}

/** A webhook receiver on loopback: answers each delivery with the next status given (then 200), and keeps what it got. */
const received: Array<{ readonly headers: IncomingHttpHeaders; readonly body: { id: string; type: string } }> = []
const answers: Array<number> = []
let receiver: Server

let gw: TestGateway
/** The provider behind the gateway: it answers each chat completion with "answer to <the last message>". */
let up: FakeUpstream
let browser: Browser
beforeAll(async () => {
  up = await startFakeUpstream()
  up.handler = answerNamingQuestion
  receiver = createServer((req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8")
    })
    req.on("end", () => {
      received.push({ headers: req.headers, body: JSON.parse(body) as { id: string; type: string } })
      res.writeHead(answers.shift() ?? 200).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  gw = await startGateway({
    SERVICE_API_KEY: APP_KEY,
    ADMIN_API_KEY: ADMIN_KEY,
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-upstream-console-test",
    // The receiver is on loopback; one attempt fails a delivery, so a failure shows at once.
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_MAX_ATTEMPTS: "1",
    // Keys bound to a provider key keep it encrypted with this.
    KEY_ENCRYPTION_KEY: "d".repeat(64)
  })
  const admin = { authorization: `Bearer ${ADMIN_KEY}` }
  await gw.request("POST", "/api/profiles", { json: { externalId: USER }, headers: admin })
  await gw.request("PATCH", `/api/profiles/${USER}`, {
    json: { summary: "A data engineer who cooks." },
    headers: admin
  })
  await gw.request("PATCH", `/api/profiles/${USER}`, {
    json: { summary: "A data engineer from Lyon who cooks vegetarian food." },
    headers: admin
  })
  await gw.request("PUT", `/api/profiles/${USER}/traits/expertise_level`, {
    json: { value: "beginner" },
    headers: admin
  })
  for (const content of ["Allergic to peanuts", "Has a vegetable garden"]) {
    await gw.request("POST", `/api/profiles/${USER}/memories`, {
      json: { content, type: "fact", importance: 0.8 },
      headers: admin
    })
  }
  const [profile] = await gw.query<{ id: string }>("SELECT id FROM profiles WHERE external_id = $1", [USER])
  await gw.query(
    "INSERT INTO messages (profile_id, role, content) VALUES ($1, 'user', 'What can I cook tonight?'), ($1, 'assistant', 'A peanut-free curry.')",
    [profile!.id]
  )
  await gw.query(
    "INSERT INTO extraction_jobs (profile_id, kind, status, attempts, last_error, message_ids) VALUES ($1, 'turn', 'failed', 5, 'extraction model answered 500: down', '{}')",
    [profile!.id]
  )
  // A profile with ten thousand memories: its page shows one page of them.
  await gw.request("POST", "/api/profiles", { json: { externalId: "hoarder" }, headers: admin })
  await gw.query(
    "INSERT INTO memories (profile_id, content, type, importance) SELECT p.id, 'memory number ' || i, 'fact', (i % 100) / 100.0 FROM profiles p, generate_series(1, 10000) i WHERE p.external_id = 'hoarder'"
  )
  // A profile with 31 memories (the count: 5,900 px as cards), each of its own type and weight.
  await gw.request("POST", "/api/profiles", { json: { externalId: DENSE_USER }, headers: admin })
  await gw.query(
    `INSERT INTO memories (profile_id, content, type, importance)
     SELECT p.id, 'Dense memory ' || lpad(i::text, 2, '0') || ' ' || repeat('with a long tail of words ', 8),
            (ARRAY['fact', 'preference', 'event', 'context'])[1 + i % 4], ((i * 37) % 100) / 100.0
     FROM profiles p, generate_series(1, 31) i WHERE p.external_id = $1`,
    [DENSE_USER]
  )
  // A job its profile's hourly budget put off: pending, with the worker's note, running in 40 minutes.
  await gw.query(
    `INSERT INTO extraction_jobs (profile_id, kind, status, attempts, last_error, run_after, message_ids)
     VALUES ($1, 'turn', 'pending', 0, $2, now() + interval '40 minutes', '{}')`,
    [profile!.id, DEFERRAL_NOTE]
  )
  // Two namespaces with the same user id, each made by an admin key of its own namespace.
  for (const namespace of ["a", "b"]) {
    const created = await gw.request<{ key: string }>("POST", "/api/keys", {
      json: { namespace, scope: "admin", label: `${namespace} operators` },
      headers: admin
    })
    namespaceAdmins[namespace] = created.body.key
    for (const externalId of [SHARED_USER, `only-in-${namespace}`]) {
      await gw.request("POST", "/api/profiles", { json: { externalId }, headers: bearer(created.body.key) })
    }
  }
  // Namespace b's only job has failed: its jobs page has nothing pending.
  await gw.query(
    `INSERT INTO extraction_jobs (profile_id, kind, status, attempts, last_error, message_ids)
     SELECT id, 'summary', 'failed', 3, 'summary model answered 503', '{}' FROM profiles
     WHERE namespace = 'b' AND external_id = 'only-in-b'`
  )
  await mkdir(SCREENSHOTS, { recursive: true })
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await gw?.close()
  await up?.close()
  await new Promise((resolve) => receiver?.close(resolve))
})

const screenshot = (page: Page, name: string) => page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true })

/** A page signed in with the admin key (or another), at the given width. */
const signedIn = (width = 1280, key = ADMIN_KEY) => signIn(browser, gw.baseUrl, key, width)

const openProfile = async (page: Page, externalId: string) => {
  await page.getByLabel("Find by external id").fill(externalId)
  await page.getByRole("link", { name: externalId, exact: true }).click()
  await page.getByRole("heading", { name: externalId, level: 1 }).waitFor()
}

interface ListedThread {
  readonly threadId: string
  readonly messages: number
}

/**
 * A chat completion through the gateway in a thread of a user, with the messages given (a user's question
 * by default); resolves once the exchange (what was sent and the answer) is recorded in the thread.
 */
const chatInThread = async (
  user: string,
  thread: string,
  content: string,
  messages: ReadonlyArray<Record<string, unknown>> = [{ role: "user", content }]
) => {
  const threads = () =>
    gw
      .request<{ threads: Array<ListedThread> }>("GET", `/api/profiles/${encodeURIComponent(user)}/threads`, {
        headers: bearer(ADMIN_KEY)
      })
      .then((response) => (response.status === 200 ? response.body.threads : []))
  const before = (await threads()).find((listed) => listed.threadId === thread)?.messages ?? 0
  const response = await gw.request<{ choices: Array<{ message: { content: string | null } }> }>(
    "POST",
    "/v1/chat/completions",
    {
      json: { model: "gpt-test", messages },
      headers: { ...bearer(APP_KEY), "x-service-id": user, "x-service-thread-id": thread }
    }
  )
  expect(response.status).toBe(200)
  await eventually(async () =>
    (await threads()).find((listed) => listed.threadId === thread)?.messages === before + messages.length + 1
      ? true
      : undefined
  )
  return response.body.choices[0]!.message
}

const trait = async (key: string) =>
  (
    await gw.request<{ traits: Array<{ key: string; value: unknown }> }>("GET", `/api/profiles/${USER}/traits`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` }
    })
  ).body.traits.find((t) => t.key === key)?.value

describe("the web console", () => {
  it("asks for the key once, refuses a wrong one, and keeps it only for the tab", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(gw.baseUrl)
    expect(new URL(page.url()).pathname).toBe("/console/")
    await page.getByLabel("Admin key").fill("sk-wrong")
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("alert").filter({ hasText: "does not accept this key" }).waitFor()
    await screenshot(page, "sign-in")
    expect(page.url()).not.toContain("sk-")
    await page.getByLabel("Admin key").fill(ADMIN_KEY)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Profiles" }).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem("gateway-console-key"))).toBe(ADMIN_KEY)
    expect(await page.evaluate(() => localStorage.length)).toBe(0)
    expect(page.url()).not.toContain(ADMIN_KEY)
    await context.close()
  })

  it("finds a profile and shows its counts, summary versions and recent turns", async () => {
    const page = await signedIn()
    await page.getByLabel("Find by external id").fill(USER)
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: USER, exact: true }) })
    await row.waitFor()
    expect(await row.getByRole("cell").allTextContents()).toEqual(expect.arrayContaining(["1", "2"]))
    await screenshot(page, "profiles")
    expect(await violations(page)).toEqual([])

    await row.getByRole("link", { name: USER }).click()
    await page.getByText("A data engineer from Lyon who cooks vegetarian food.").first().waitFor()
    // The diff between the two versions: what was added is marked.
    await page.locator("ins").filter({ hasText: "from Lyon" }).waitFor()
    await screenshot(page, "profile-summary")
    await page.getByRole("tab", { name: "Recent turns" }).click()
    await page.getByText("A peanut-free curry.").waitFor()
    await screenshot(page, "profile-turns")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("edits a trait in its row, shows the refusal of a value its type does not allow, keeps focus, and the preview follows", async () => {
    await gw.request("PUT", `/api/profiles/${USER}/traits/interests`, {
      json: { value: ["cooking"] },
      headers: bearer(ADMIN_KEY)
    })
    const page = await signedIn()
    await openProfile(page, USER)
    await page.getByRole("tab", { name: "Traits" }).click()
    const edit = page.getByRole("button", { name: "Edit interests" })
    await edit.click()
    // The editor opens beneath the row, and focus moves into its field.
    const field = page.getByLabel("Value (array)")
    await field.and(page.locator(":focus")).waitFor()
    expect(await edit.getAttribute("aria-expanded")).toBe("true")
    await field.fill('{"cooking": true}')
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByRole("alert").filter({ hasText: "interests" }).waitFor()
    expect(await trait("interests")).toEqual(["cooking"])
    await screenshot(page, "trait-refused")
    await field.fill('["cooking", "hiking"]')
    await page.getByRole("button", { name: "Save" }).click()
    await page.locator("[data-trait=interests] td.value").filter({ hasText: "hiking" }).waitFor()
    expect(await trait("interests")).toEqual(["cooking", "hiking"])
    // Saved: the editor is gone and focus is back on the row's Edit button.
    await edit.and(page.locator(":focus")).waitFor()
    expect(await field.count()).toBe(0)
    // Cancelled (with Escape): the same.
    await edit.click()
    await field.and(page.locator(":focus")).waitFor()
    await page.keyboard.press("Escape")
    await edit.and(page.locator(":focus")).waitFor()
    expect(await edit.getAttribute("aria-expanded")).toBe("false")

    await page.getByRole("tab", { name: "What would be injected" }).click()
    await page.getByLabel("A message from this user").fill("What should I cook with peanuts?")
    await page.getByRole("button", { name: "Preview" }).click()
    const block = page.getByTestId("preview-block")
    await block.filter({ hasText: "hiking" }).waitFor()
    expect(await block.textContent()).toContain("Allergic to peanuts")
    await screenshot(page, "preview")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("edits an enum trait with a select of exactly its allowed values", async () => {
    const page = await signedIn()
    // The select's options come from the gateway's trait definitions (GET /api/trait-definitions).
    await openProfile(page, USER)
    await page.getByRole("tab", { name: "Traits" }).click()
    const edit = page.getByRole("button", { name: "Edit expertise_level" })
    await edit.click()
    const select = page.getByRole("combobox", { name: "Value (enum)" })
    await select.and(page.locator(":focus")).waitFor()
    expect(await select.locator("option").allTextContents()).toEqual(["beginner", "intermediate", "advanced", "expert"])
    expect(await select.inputValue()).toBe("beginner")
    await screenshot(page, "trait-enum")
    expect(await violations(page)).toEqual([])
    await select.selectOption("expert")
    await page.getByRole("button", { name: "Save" }).click()
    await page.locator("[data-trait=expertise_level] td.value").filter({ hasText: "expert" }).waitFor()
    await edit.and(page.locator(":focus")).waitFor()
    expect(await trait("expertise_level")).toBe("expert")
    await page.context().close()
  })

  it("deletes a memory, and the preview no longer injects it", async () => {
    const page = await signedIn()
    await openProfile(page, USER)
    await page.getByRole("tab", { name: "Memories" }).click()
    const card = page.locator("[data-memory]").filter({ hasText: "Allergic to peanuts" })
    page.once("dialog", (dialog) => void dialog.accept())
    await card.getByRole("button", { name: "Delete" }).click()
    await card.waitFor({ state: "detached" })
    await screenshot(page, "memories")
    const memories = await gw.request<{ memories: Array<{ content: string }> }>(
      "GET",
      `/api/profiles/${USER}/memories`,
      {
        headers: { authorization: `Bearer ${ADMIN_KEY}` }
      }
    )
    expect(memories.body.memories.map((m) => m.content)).toEqual(["Has a vegetable garden"])

    await page.getByRole("tab", { name: "What would be injected" }).click()
    await page.getByLabel("A message from this user").fill("What should I cook with peanuts?")
    await page.getByRole("button", { name: "Preview" }).click()
    await page.getByTestId("preview-receipt").waitFor()
    expect(await page.getByTestId("preview-block").textContent()).not.toContain("Allergic to peanuts")
    await page.context().close()
  })

  it("pages through ten thousand memories fifty at a time", async () => {
    const page = await signedIn()
    await openProfile(page, "hoarder")
    await page.getByRole("tab", { name: "Memories" }).click()
    await page.getByText("1–50 of 10000").waitFor()
    expect(await page.locator("[data-memory]").count()).toBe(50)
    await page.getByRole("navigation", { name: "Memories pages" }).getByRole("button", { name: "Next" }).click()
    await page.getByText("51–100 of 10000").waitFor()
    await page.context().close()
  })

  it("adds a memory from the profile page: it shows in the table and in the API", async () => {
    const page = await signedIn()
    await openProfile(page, USER)
    await page.getByRole("tab", { name: "Memories" }).click()
    await page.locator("[data-memory]").first().waitFor()
    const opener = page.getByRole("button", { name: "Add memory" })
    await opener.click()
    const form = page.getByRole("form", { name: "Add a memory" })
    const content = form.getByLabel("Content")
    await content.and(page.locator(":focus")).waitFor()
    await content.fill("Grows tomatoes on the balcony")
    await form.getByLabel("Type").selectOption("preference")
    await form.getByLabel("Importance").fill("0.7")
    await form.getByLabel("Tags (comma-separated)").fill("garden, home")
    await form.getByRole("button", { name: "Add", exact: true }).click()
    const row = page.locator("[data-memory]").filter({ hasText: "Grows tomatoes on the balcony" })
    await row.waitFor()
    expect(await row.locator("td").allTextContents()).toEqual(expect.arrayContaining(["preference", "0.70"]))
    await form.getByRole("status").filter({ hasText: "Added" }).waitFor()
    // Ready for the next one: emptied, and the typing goes on there.
    await content.and(page.locator(":focus")).waitFor()
    expect(await content.inputValue()).toBe("")
    await screenshot(page, "memory-added")
    expect(await violations(page)).toEqual([])

    const read = await gw.request<{ recentMemories: Array<{ content: string; type: string; importance: number }> }>(
      "GET",
      `/api/profiles/${USER}`,
      { headers: bearer(ADMIN_KEY) }
    )
    expect(read.body.recentMemories).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ content: "Grows tomatoes on the balcony", type: "preference", importance: 0.7 })
      ])
    )
    const listed = await gw.request<{ memories: Array<{ content: string; tags: Array<string> }> }>(
      "GET",
      `/api/profiles/${USER}/memories`,
      { headers: bearer(ADMIN_KEY) }
    )
    expect(listed.body.memories.find((m) => m.content === "Grows tomatoes on the balcony")?.tags).toEqual([
      "garden",
      "home"
    ])
    // Closed: focus back on the button that opened it.
    await form.getByRole("button", { name: "Close" }).click()
    await opener.and(page.locator(":focus")).waitFor()

    // Ranked for a message: three short memories all fit, so a request would carry every one, and each says so.
    await page.getByLabel("Rank for a message").fill("Where do I grow my tomatoes?")
    await page.getByRole("button", { name: "Rank", exact: true }).click()
    await page.getByText("Ranked as injection ranks them").waitFor()
    await row.locator(".badge").filter({ hasText: "injected" }).waitFor()
    const memoryRows = page.locator("[data-memory]")
    expect(await memoryRows.locator(".badge").allTextContents()).toEqual(
      Array.from({ length: await memoryRows.count() }, () => "injected")
    )
    await page.context().close()
  })

  it("shows 31 memories a line each, sorts them by a column header, and edits one in its row keeping focus", async () => {
    const page = await signedIn()
    await openProfile(page, DENSE_USER)
    await page.getByRole("tab", { name: "Memories" }).click()
    const table = page.getByRole("table", { name: /^Memories/ })
    const rows = table.locator("tr[data-memory]")
    await rows.nth(30).waitFor()
    expect(await rows.count()).toBe(31)
    // One line each: the 31 take less than 1,600 px (as cards they took about 5,900).
    const heights = await rows.evaluateAll((trs) => trs.map((tr) => tr.getBoundingClientRect().height))
    expect(Math.max(...heights)).toBeLessThanOrEqual(48)
    expect((await table.boundingBox())!.height).toBeLessThan(1600)
    await screenshot(page, "memories-table")
    expect(await violations(page)).toEqual([])

    const column = (index: number) =>
      rows.evaluateAll((trs, index) => trs.map((tr) => tr.children[index]!.textContent ?? ""), index)
    const importance = table.getByRole("columnheader", { name: "Importance" })
    const sortedBy = (direction: string) => table.locator(`th[aria-sort="${direction}"]`)
    expect(await sortedBy("ascending").count()).toBe(0)
    await importance.getByRole("button").click()
    await sortedBy("ascending").filter({ hasText: "Importance" }).waitFor()
    const ascending = (await column(2)).map(Number)
    expect(ascending).toEqual([...ascending].sort((a, b) => a - b))
    await importance.getByRole("button").click()
    await sortedBy("descending").filter({ hasText: "Importance" }).waitFor()
    const descending = (await column(2)).map(Number)
    expect(descending).toEqual([...descending].sort((a, b) => b - a))
    await table.getByRole("columnheader", { name: "Content" }).getByRole("button").click()
    await sortedBy("ascending").filter({ hasText: "Content" }).waitFor()
    expect(await importance.getAttribute("aria-sort")).toBeNull()
    const contents = await column(0)
    expect(contents[0]).toMatch(/^\s*Dense memory 01 /)
    expect(contents[30]).toMatch(/^\s*Dense memory 31 /)

    // Edited in its row: focus goes into the editor, then back to the row's Edit button.
    const row = rows.filter({ hasText: "Dense memory 07 " })
    await row.getByRole("button", { name: /^Edit memory Dense memory 07/ }).click()
    const form = page.getByRole("form", { name: /^Edit memory Dense memory 07/ })
    const content = form.getByLabel("Content")
    await content.and(page.locator(":focus")).waitFor()
    expect(await content.inputValue()).toMatch(/^Dense memory 07 with a long tail of words/)
    await screenshot(page, "memory-editing")
    expect(await violations(page)).toEqual([])
    // Only the text changes: its importance (0.59, not a round step) is saved as it was.
    await content.fill("Dense memory 07, edited")
    await form.getByRole("button", { name: "Save" }).click()
    const edited = rows.filter({ hasText: "Dense memory 07, edited" })
    await edited
      .getByRole("button", { name: "Edit memory Dense memory 07, edited" })
      .and(page.locator(":focus"))
      .waitFor()
    expect(await form.count()).toBe(0)
    expect(await edited.locator("td").nth(2).textContent()).toBe("0.59")
    const listed = await gw.request<{ memories: Array<{ content: string; importance: number }> }>(
      "GET",
      `/api/profiles/${DENSE_USER}/memories?limit=50`,
      { headers: bearer(ADMIN_KEY) }
    )
    expect(listed.body.memories.find((m) => m.content === "Dense memory 07, edited")?.importance).toBe(0.59)

    // Cancelled: the same, and nothing changed.
    const other = rows.filter({ hasText: "Dense memory 12 " })
    const editOther = other.getByRole("button", { name: /^Edit memory/ })
    await editOther.click()
    await page
      .getByRole("form", { name: /^Edit memory Dense memory 12/ })
      .getByLabel("Content")
      .fill("changed my mind")
    await page.getByRole("button", { name: "Cancel" }).click()
    await editOther.and(page.locator(":focus")).waitFor()
    expect(await rows.filter({ hasText: "changed my mind" }).count()).toBe(0)

    // Ranked for a message: too many to carry them all, so only the best are marked as injected.
    await page.getByLabel("Rank for a message").fill("What did I edit in memory 07?")
    await page.getByRole("button", { name: "Rank", exact: true }).click()
    await page.getByText("Ranked as injection ranks them").waitFor()
    await edited.locator(".badge").filter({ hasText: "injected" }).waitFor()
    const injected = await rows.locator(".badge").filter({ hasText: "injected" }).count()
    expect(injected).toBeLessThan(await rows.count())
    await screenshot(page, "memories-ranked")
    await page.context().close()
  })

  it("retries a failed job from the jobs page", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Jobs" }).click()
    await page.getByRole("tab", { name: /^Failed/ }).click()
    const row = page.locator("[data-job]").filter({ hasText: "down" })
    await row.waitFor()
    // Whose job it is: the user id, not the profile's UUID.
    expect(await row.getByRole("link").textContent()).toBe(USER)
    await screenshot(page, "jobs")
    expect(await violations(page)).toEqual([])
    await row.getByRole("button", { name: /Retry/ }).click()
    await row.waitFor({ state: "detached" })
    const [job] = await gw.query<{ status: string; attempts: number }>(
      "SELECT status, attempts FROM extraction_jobs WHERE last_error LIKE '%down%'"
    )
    expect(job).toEqual({ status: "pending", attempts: 0 })
    await page.context().close()
  })

  it("opens on the pending jobs with each status's count, and says whose a deferred job is, when it runs and why it waits", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Jobs" }).click()
    await page.getByRole("tab", { name: /^Pending/, selected: true }).waitFor()
    const deferred = page.locator('[data-job][data-wait-reason="deferred"]')
    await deferred.waitFor()
    const { counts } = (
      await gw.request<{ counts: Record<string, number> }>("GET", "/api/jobs?limit=1", { headers: bearer(ADMIN_KEY) })
    ).body
    expect(counts["pending"]).toBeGreaterThan(0)
    for (const [status, label] of [
      ["pending", "Pending"],
      ["running", "Running"],
      ["failed", "Failed"],
      ["succeeded", "Succeeded"]
    ] as const) {
      expect(await page.getByRole("tab", { name: new RegExp(`^${label}`) }).textContent()).toBe(
        `${label} ${counts[status]}`
      )
    }
    // Whose it is, when it runs (in 40 minutes: the budget frees a slot then) and why it waits.
    expect(await deferred.getByRole("link").textContent()).toBe(USER)
    const runAfter = deferred.locator("time")
    expect(await runAfter.textContent()).toMatch(/^in (39|40) min$/)
    const [job] = await gw.query<{ run_after: Date }>(
      "SELECT run_after FROM extraction_jobs WHERE last_error LIKE 'deferred:%'"
    )
    expect(Date.parse((await runAfter.getAttribute("datetime"))!)).toBe(job!.run_after.getTime())
    await deferred.getByText("Deferred: the profile's hourly job budget is spent").waitFor()
    await deferred.getByText("EXTRACTION_JOBS_PER_PROFILE_PER_HOUR").waitFor()
    await screenshot(page, "jobs-pending")
    expect(await violations(page)).toEqual([])
    // The tabs from the keyboard: to the failed jobs and back.
    await page.getByRole("tab", { name: /^Pending/ }).focus()
    await page.keyboard.press("ArrowRight")
    await page.keyboard.press("ArrowRight")
    await page
      .getByRole("tab", { name: /^Failed/, selected: true })
      .and(page.locator(":focus"))
      .waitFor()
    // Namespace b's failed job: the environment's admin key sees every namespace.
    await page.locator("[data-job]").filter({ hasText: "summary model answered 503" }).waitFor()
    await page.keyboard.press("Home")
    await deferred.waitFor()
    // The user id leads to the profile.
    await deferred.getByRole("link", { name: USER }).click()
    await page.getByRole("heading", { name: USER, level: 1 }).waitFor()
    await page.context().close()
  })

  it("opens the jobs page on the first status that has jobs when none is pending", async () => {
    const page = await signedIn(1280, namespaceAdmins["b"])
    await page.getByRole("link", { name: "Jobs" }).click()
    await page.getByRole("tab", { name: /^Failed/, selected: true }).waitFor()
    expect(await page.getByRole("tab", { name: /^Pending/ }).textContent()).toBe("Pending 0")
    const row = page.locator("[data-job]").filter({ hasText: "summary model answered 503" })
    await row.waitFor()
    expect(await row.getByRole("link").textContent()).toBe("only-in-b")
    await page.getByRole("tab", { name: /^Pending/ }).click()
    await page.getByText("No pending jobs.").waitFor()
    await page.context().close()
  })

  it("draws the overview from /metrics", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Overview" }).click()
    await page.getByText("Requests per second", { exact: true }).waitFor()
    // Two readings make a rate: the chart then has a value.
    await page
      .locator("figure.metric")
      .filter({ hasText: "Requests per second" })
      .locator("strong")
      .filter({ hasText: /\d/ })
      .waitFor({ timeout: 20_000 })
    const chart = page.locator("figure.metric").filter({ hasText: "Requests per second" })
    // A y axis in the metric's unit, an x axis of clock times: a tick a minute over the last five.
    expect(await chart.locator('[data-axis="y"] text').first().textContent()).toBe("req/s")
    expect(await chart.locator('[data-axis="y"] text').count()).toBe(4)
    const times = await chart.locator('[data-axis="x"] text').allTextContents()
    expect(times.length).toBeGreaterThanOrEqual(5)
    for (const time of times) expect(time).toMatch(/^\d{2}:\d{2}$/)
    expect(
      await page
        .locator("figure.metric")
        .filter({ hasText: "Gateway overhead" })
        .locator('[data-axis="y"] text')
        .first()
        .textContent()
    ).toBe("ms")
    // For screen readers: the chart said in words, and each reading in a table.
    expect(await chart.getByRole("img").getAttribute("aria-label")).toMatch(
      /^Requests per second from \d{2}:\d{2} to \d{2}:\d{2}: latest [\d.]+ req\/s, lowest [\d.]+ req\/s, highest [\d.]+ req\/s\.$/
    )
    const readings = page.getByRole("table", { name: "Requests per second: readings" })
    expect(await readings.locator("tbody tr").count()).toBeGreaterThanOrEqual(1)
    expect(await readings.locator("tbody th").first().textContent()).toMatch(/^\d{2}:\d{2}:\d{2}$/)
    expect(await readings.locator("tbody td").first().textContent()).toMatch(/^[\d.]+ req\/s$/)
    await screenshot(page, "overview")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("switches namespace: the profile list, the profile page and the key's own namespace follow", async () => {
    const page = await signedIn()
    const switcher = page.getByLabel("Namespace", { exact: true })
    const link = (name: string) => page.getByRole("link", { name, exact: true })
    // All namespaces: the same user id twice, each row saying its namespace.
    expect(await switcher.inputValue()).toBe("")
    await link("only-in-b").waitFor()
    const shared = page.getByRole("row").filter({ has: link(SHARED_USER) })
    expect(await shared.count()).toBe(2)
    expect((await shared.allTextContents()).map((row) => row.match(/^shared-user(a|b)/)?.[1]).sort()).toEqual([
      "a",
      "b"
    ])
    await page.getByRole("columnheader", { name: "External id · namespace" }).waitFor()

    await switcher.selectOption("a")
    // The list of all namespaces (the only one with that column) is gone; then a's is shown.
    await page.getByRole("columnheader", { name: "External id · namespace" }).waitFor({ state: "detached" })
    await link("only-in-a").waitFor()
    expect(await link("only-in-b").count()).toBe(0)
    expect(await link(SHARED_USER).count()).toBe(1)
    await screenshot(page, "profiles-namespace-a")
    expect(await violations(page)).toEqual([])

    await switcher.selectOption("b")
    await link("only-in-b").waitFor()
    expect(await link("only-in-a").count()).toBe(0)
    // Remembered for the tab: a reload keeps b, and its calls stay scoped to it.
    await page.reload()
    await link("only-in-b").waitFor()
    expect(await switcher.inputValue()).toBe("b")
    expect(await link("only-in-a").count()).toBe(0)
    expect(await page.evaluate(() => localStorage.length)).toBe(0)

    // Back to all of them: the profile page says which namespace the profile is in.
    await switcher.selectOption("")
    await page.getByRole("columnheader", { name: "External id · namespace" }).waitFor()
    await page.getByRole("row").filter({ hasText: "only-in-a" }).getByRole("link").click()
    await page.getByRole("heading", { name: "only-in-a", level: 1 }).waitFor()
    await page.getByText(/Namespace a ·/).waitFor()
    await page.context().close()

    // A namespace's own admin key: its namespace only, nothing to switch, no gateway-wide metrics.
    const scoped = await signedIn(1280, namespaceAdmins["b"])
    await scoped.getByRole("banner").getByText("Namespace b").waitFor()
    await scoped.getByRole("link", { name: "only-in-b", exact: true }).waitFor()
    expect(await scoped.getByRole("link", { name: "only-in-a", exact: true }).count()).toBe(0)
    expect(await scoped.getByRole("combobox", { name: "Namespace" }).count()).toBe(0)
    expect(await scoped.getByRole("link", { name: "Overview" }).count()).toBe(0)
    await scoped.context().close()
  })

  it("creates a key and shows its secret once, rotates it, and marks it revoked", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Keys" }).click()
    await page.getByRole("heading", { name: "Keys", level: 1 }).waitFor()
    await page.getByLabel("Namespace", { exact: true }).and(page.getByRole("textbox")).fill("a")
    await page.getByLabel("Scope").selectOption("admin")
    await page.getByLabel("Label (optional)").fill("console key")
    await page.getByRole("button", { name: "Create key" }).click()
    const secretField = page.getByLabel("The new key", { exact: true })
    await secretField.waitFor()
    const secret = await secretField.inputValue()
    expect(secret).toMatch(/^pmg_[A-Za-z0-9_-]{43}$/)
    await page.getByText("you will not see it again").waitFor()
    await screenshot(page, "key-created")
    expect(await violations(page)).toEqual([])
    // The key works, in its namespace only.
    const listed = await gw.request<{ profiles: Array<{ namespace: string }> }>("GET", "/api/profiles", {
      headers: bearer(secret)
    })
    expect(new Set(listed.body.profiles.map((profile) => profile.namespace))).toEqual(new Set(["a"]))

    const row = page.locator("[data-key]").filter({ hasText: "console key" })
    await row.filter({ hasText: secret.slice(0, 12) }).waitFor()
    expect(await row.getAttribute("data-state")).toBe("live")
    await page.getByRole("button", { name: "Done, hide it" }).click()
    await secretField.waitFor({ state: "detached" })
    // Once hidden, the secret is nowhere on the page: the list shows its first characters only.
    const onPage = (text: string) =>
      page.evaluate(
        (text) =>
          (document.body.textContent ?? "").includes(text) ||
          Array.from(document.querySelectorAll("input")).some((input) => input.value.includes(text)),
        text
      )
    expect(await onPage(secret.slice(0, 12))).toBe(true)
    expect(await onPage(secret)).toBe(false)

    // Rotated with no grace: a new secret, shown once; the old one has expired.
    await row.getByRole("button", { name: "Rotate key" }).click()
    await row.getByLabel("The old secret keeps working for").selectOption("0")
    await row.getByRole("button", { name: "Rotate", exact: true }).click()
    await page.getByRole("heading", { name: /rotated/ }).waitFor()
    const rotated = await secretField.inputValue()
    expect(rotated).toMatch(/^pmg_/)
    expect(rotated).not.toBe(secret)
    await page
      .locator('[data-key][data-state="expired"]')
      .filter({ hasText: secret.slice(0, 12) })
      .waitFor()
    expect((await gw.request("GET", "/api/profiles", { headers: bearer(secret) })).status).toBe(401)

    const current = page.locator('[data-key][data-state="live"]').filter({ hasText: rotated.slice(0, 12) })
    page.once("dialog", (dialog) => void dialog.accept())
    await current.getByRole("button", { name: "Revoke key" }).click()
    const revoked = page.locator('[data-key][data-state="revoked"]').filter({ hasText: rotated.slice(0, 12) })
    await revoked.getByText("Revoked").waitFor()
    expect((await gw.request("GET", "/api/profiles", { headers: bearer(rotated) })).status).toBe(401)
    await screenshot(page, "keys")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("creates a key bound to a provider key: listed with its provider, and its requests go with that key", async () => {
    const providerKey = "sk-provider-key-bound-in-console"
    const page = await signedIn()
    await page.getByRole("link", { name: "Keys" }).click()
    await page.getByRole("heading", { name: "Keys", level: 1 }).waitFor()
    await page.getByLabel("Namespace", { exact: true }).and(page.getByRole("textbox")).fill("bound")
    await page.getByLabel("Label (optional)").fill("bound to openai")
    await page.getByRole("combobox", { name: "Provider key" }).selectOption("openai")
    await page.getByLabel("OpenAI API key").fill(providerKey)
    await page.getByRole("button", { name: "Create key" }).click()
    const secretField = page.getByLabel("The new key", { exact: true })
    await secretField.waitFor()
    const secret = await secretField.inputValue()
    await page.getByText("Its requests go to openai with the provider key given").waitFor()
    await screenshot(page, "key-bound")
    expect(await violations(page)).toEqual([])

    // Listed as bound to its provider.
    const table = page.getByRole("table", { name: "Keys" })
    const row = table.locator("[data-key]").filter({ hasText: secret.slice(0, 12) })
    await row.waitFor()
    const columns = await table.locator("thead th").allTextContents()
    expect(await row.locator("th, td").nth(columns.indexOf("Provider")).textContent()).toBe("openai")
    // The provider key is nowhere on the page once sent, nor in what the API lists.
    expect(await page.getByLabel("OpenAI API key").count()).toBe(0)
    expect(await page.evaluate((text) => document.body.innerHTML.includes(text), providerKey)).toBe(false)
    const listed = await gw.request("GET", "/api/keys", { headers: bearer(ADMIN_KEY) })
    expect(listed.text).not.toContain(providerKey)

    // The key's completions reach the provider with the key it is bound to.
    const answered = await gw.request("POST", "/v1/chat/completions", {
      json: { model: "gpt-test", messages: [{ role: "user", content: "Which key?" }] },
      headers: { ...bearer(secret), "x-service-id": "bound-key-user" }
    })
    expect(answered.status).toBe(200)
    expect(up.requests.at(-1)!.headers["authorization"]).toBe(`Bearer ${providerKey}`)
    await page.context().close()
  })

  it("shows a namespace's usage: its totals, each day's tokens, app traffic beside memory work, and the top keys, users and models", async () => {
    // An app key of a namespace of its own, so the figures are this test's alone.
    const created = await gw.request<{ id: string; key: string; prefix: string }>("POST", "/api/keys", {
      json: { namespace: USAGE_NAMESPACE, scope: "app", label: "usage app" },
      headers: bearer(ADMIN_KEY)
    })
    usageKey = created.body
    // Each answer reports 11 input and 7 output tokens: two requests for one user, one for another.
    for (const user of ["usage-heavy", "usage-heavy", "usage-light"]) {
      const response = await gw.request("POST", "/v1/chat/completions", {
        json: { model: "gpt-test", messages: [{ role: "user", content: "How much did I use?" }] },
        headers: { ...bearer(usageKey.key), "x-service-id": user }
      })
      expect(response.status).toBe(200)
    }
    // Usage is written in batches, a fraction of a second after the answers.
    const usageOf = async () =>
      (
        await gw.request<{ usage: Array<{ requests: number }> }>("GET", "/api/usage?groupBy=namespace", {
          headers: { ...bearer(ADMIN_KEY), "x-service-namespace": USAGE_NAMESPACE }
        })
      ).body.usage[0]?.requests
    await expect.poll(usageOf).toBe(3)

    const page = await signedIn()
    await page.getByLabel("Namespace", { exact: true }).selectOption(USAGE_NAMESPACE)
    await page.getByRole("link", { name: "Usage", exact: true }).click()
    await page.getByRole("heading", { name: "Usage", level: 1 }).waitFor()
    const total = (name: string) => page.locator(`[data-total="${name}"] dd`)
    await expect.poll(() => total("requests").textContent()).toBe("3")
    expect(await total("input").textContent()).toBe("33")
    expect(await total("output").textContent()).toBe("21")
    expect(await total("cached").textContent()).toBe("0 %")
    expect(await total("memory-work").textContent()).toBe("0")
    // No MODEL_PRICES: no cost.
    expect(await total("cost").textContent()).toBe("—")
    // Today's tokens on the charts, a day a reading.
    const input = page.locator("figure.metric").filter({ hasText: "Input tokens per day" })
    expect(await input.locator("strong").textContent()).toBe("33 tokens")
    expect(await page.getByRole("table", { name: "Input tokens per day: readings" }).locator("tbody tr").count()).toBe(
      30
    )
    // All of it the app's traffic.
    const app = page.getByRole("table", { name: "App traffic and memory work" }).locator('[data-work="app"]')
    expect(await app.locator('[data-column="calls"]').textContent()).toBe("3")
    expect(await app.locator('[data-column="tokens"]').textContent()).toBe("54")
    expect(await app.locator('[data-column="share"]').textContent()).toBe("100 %")

    const cells = (table: string, group: string) =>
      page.getByRole("table", { name: table }).locator(`tr[data-group="${group}"] > *`).allTextContents()
    expect(await cells("Top keys", usageKey.id)).toEqual([
      `${usageKey.prefix}… (usage app)`,
      "3",
      "33",
      "0",
      "21",
      expect.stringMatching(/^\d+$/),
      "0",
      "—"
    ])
    expect(await page.getByRole("table", { name: "Top users" }).locator("tbody th").allTextContents()).toEqual([
      "usage-heavy",
      "usage-light"
    ])
    expect((await cells("Top users", "usage-heavy")).slice(0, 5)).toEqual(["usage-heavy", "2", "22", "0", "14"])
    expect((await cells("Top users", "usage-light")).slice(0, 5)).toEqual(["usage-light", "1", "11", "0", "7"])
    expect((await cells("Top models", "gpt-test")).slice(0, 5)).toEqual(["gpt-test", "3", "33", "0", "21"])
    await screenshot(page, "usage")
    expect(await violations(page)).toEqual([])

    // The last 7 days: the same traffic, a week of readings.
    await page.getByLabel("Period").selectOption("7")
    await page.getByRole("table", { name: "Input tokens per day: readings" }).locator("tbody tr").nth(6).waitFor()
    expect(await page.getByRole("table", { name: "Input tokens per day: readings" }).locator("tbody tr").count()).toBe(
      7
    )
    expect(await total("requests").textContent()).toBe("3")
    // At 375 px the tables scroll in their boxes, not the page.
    await page.setViewportSize({ width: 375, height: 900 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "usage-narrow")
    await page.context().close()
  })

  it("shows each key's usage this period and sets, shows and removes its budget", async () => {
    const listedBudget = async () =>
      (
        await gw.request<{ keys: Array<{ id: string; budget: unknown }> }>("GET", "/api/keys", {
          headers: bearer(ADMIN_KEY)
        })
      ).body.keys.find((key) => key.id === usageKey.id)?.budget
    const page = await signedIn()
    await page.getByRole("link", { name: "Keys" }).click()
    const row = page.locator(`[data-key="${usageKey.id}"]`)
    // The previous test's three requests, 18 tokens each, this month.
    await row.locator("[data-usage]").filter({ hasText: "54 tokens" }).waitFor()
    expect(await row.locator("[data-usage]").textContent()).toContain("3 requests")
    const budget = row.locator("[data-budget]")
    expect(await budget.getAttribute("data-budget")).toBe("none")

    await row.getByRole("button", { name: `Set budget of key ${usageKey.prefix}` }).click()
    const form = row.getByRole("form", { name: `Budget of key ${usageKey.prefix}` })
    await form.getByLabel("Limit in").selectOption("tokens")
    await form.getByLabel("Limit", { exact: true }).fill("5000")
    await form.getByLabel("Per").selectOption("day")
    await form.getByRole("button", { name: "Save budget" }).click()
    await budget
      .locator("[data-budget-limit]")
      .filter({ hasText: /^54 \/ 5.?000 tokens today$/ })
      .waitFor()
    await form.waitFor({ state: "detached" })
    expect(await budget.getAttribute("data-budget")).toBe("tokens")
    await budget.getByText(/^Resets in \d+ (s|min|h)$/).waitFor()
    expect(await listedBudget()).toMatchObject({ tokens: 5000, period: "day", spent: 54, remaining: 4946 })
    await screenshot(page, "key-budget")
    expect(await violations(page)).toEqual([])

    await row.getByRole("button", { name: `Remove budget of key ${usageKey.prefix}` }).click()
    await budget.and(page.locator('[data-budget="none"]')).waitFor()
    expect(await budget.locator("[data-budget-limit]").count()).toBe(0)
    expect(await listedBudget()).toBeNull()
    await page.context().close()
  })

  it("creates a webhook with its secret shown once, lists its deliveries, replays a failed one, and deletes it", async () => {
    const page = await signedIn()
    // In namespace a: what the page creates and lists is a's.
    await page.getByLabel("Namespace", { exact: true }).selectOption("a")
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByText("No webhooks yet.").waitFor()
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/console`
    await page.getByLabel("URL").fill(url)
    await page.getByLabel("Description (optional)").fill("console hook")
    await page.getByRole("checkbox", { name: "memory.created" }).check()
    await page.getByRole("button", { name: "Create webhook" }).click()
    const secretField = page.getByLabel("Signing secret", { exact: true })
    await secretField.waitFor()
    expect(await secretField.inputValue()).toMatch(/^whsec_/)
    const card = page.locator("[data-webhook]").filter({ hasText: url })
    await card.getByText("No deliveries yet.").waitFor()
    await screenshot(page, "webhook-created")
    expect(await violations(page)).toEqual([])
    await page.getByRole("button", { name: "Done, hide it" }).click()
    await secretField.waitFor({ state: "detached" })

    // A memory of a's user: the receiver answers 500, and with one attempt allowed the delivery fails.
    answers.push(500)
    const admin = { authorization: `Bearer ${ADMIN_KEY}`, "x-service-namespace": "a" }
    await gw.request("POST", "/api/profiles/only-in-a/memories", {
      json: { content: "Keeps bees", type: "fact" },
      headers: admin
    })
    const webhookId = await card.getAttribute("data-webhook")
    await eventually(async () => {
      const listed = await gw.request<{ deliveries: Array<{ status: string }> }>(
        "GET",
        `/api/webhooks/${webhookId}/deliveries?status=failed`,
        { headers: admin }
      )
      return listed.body.deliveries.length > 0 ? true : undefined
    }, 20_000)
    await card.getByRole("button", { name: "Refresh" }).click()
    const failed = card.locator('[data-delivery][data-status="failed"]')
    await failed.filter({ hasText: "HTTP 500" }).waitFor()
    expect(await failed.getByRole("link").textContent()).toBe("only-in-a")
    expect(await failed.getByRole("rowheader").textContent()).toBe("memory.created")

    // Replayed: a new delivery of the same event, followed by the page until the receiver has it.
    await failed.getByRole("button", { name: /^Replay/ }).click()
    await card.locator('[data-delivery][data-status="succeeded"]').waitFor({ timeout: 20_000 })
    expect(received.map((delivery) => delivery.body.type)).toEqual(["memory.created", "memory.created"])
    expect(received[1]!.body.id).toBe(received[0]!.body.id)
    expect(received[1]!.headers["x-service-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]+$/)
    await screenshot(page, "webhook-deliveries")
    expect(await violations(page)).toEqual([])
    // At 375 px the deliveries scroll within their table, not the page.
    await page.setViewportSize({ width: 375, height: 900 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "webhooks-narrow")

    // A delivery is a job of the queue too: the failed one is listed with the jobs, and leads to its webhook.
    await page.getByRole("link", { name: "Jobs" }).click()
    await page.getByRole("tab", { name: /^Failed/ }).click()
    await page
      .locator("[data-job]")
      .filter({ hasText: "webhook" })
      .getByRole("link", { name: "webhook delivery" })
      .click()
    await card.waitFor()

    page.once("dialog", (dialog) => void dialog.accept())
    await card.getByRole("button", { name: `Delete webhook ${url}` }).click()
    await card.waitFor({ state: "detached" })
    await page.getByText("No webhooks yet.").waitFor()
    expect((await gw.request<{ webhooks: Array<unknown> }>("GET", "/api/webhooks", { headers: admin })).body).toEqual({
      webhooks: []
    })
    await page.context().close()
  })

  it("lists a profile's threads, newest first, and shows one with its messages in order", async () => {
    const user = "thread-user"
    for (const [thread, content] of [
      ["trip", "I am planning a trip to Kyoto."],
      ["trip", "In April."],
      ["work", "Draft an email."]
    ] as const) {
      expect((await chatInThread(user, thread, content)).content).toBe(`answer to ${content}`)
    }

    const page = await signedIn()
    await openProfile(page, user)
    // The last tab: reached from the first with the left arrow.
    await page.getByRole("tab", { name: "Summary" }).focus()
    await page.keyboard.press("ArrowLeft")
    await page.getByRole("tab", { name: "Threads", selected: true }).waitFor()
    expect(new URL(page.url()).hash).toMatch(/\/threads$/)
    const table = page.getByRole("table", { name: "Threads of this profile" })
    const rows = table.locator("tbody tr")
    await rows.nth(1).waitFor()
    // The most recently used first, each with its number of messages.
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-thread")))).toEqual(["work", "trip"])
    expect(await table.locator('[data-thread="work"] [data-messages]').textContent()).toBe("2")
    expect(await table.locator('[data-thread="trip"] [data-messages]').textContent()).toBe("4")
    await screenshot(page, "profile-threads")
    expect(await violations(page)).toEqual([])

    await table.getByRole("link", { name: "trip", exact: true }).click()
    await page.getByRole("heading", { name: "Thread trip", level: 2 }).waitFor()
    expect(new URL(page.url()).hash).toMatch(/\/threads\/trip$/)
    // Focus follows to the thread opened (the link followed is gone).
    await page.getByRole("heading", { name: "Thread trip" }).and(page.locator(":focus")).waitFor()
    const messages = page.getByRole("list", { name: "Thread trip" }).locator(":scope > li")
    await messages.nth(3).waitFor()
    expect(await messages.count()).toBe(4)
    expect(await messages.evaluateAll((items) => items.map((item) => item.getAttribute("data-message-role")))).toEqual([
      "user",
      "assistant",
      "user",
      "assistant"
    ])
    expect(await messages.locator(".content").allTextContents()).toEqual([
      "I am planning a trip to Kyoto.",
      "answer to I am planning a trip to Kyoto.",
      "In April.",
      "answer to In April."
    ])
    await screenshot(page, "profile-thread")
    expect(await violations(page)).toEqual([])

    // At 375 px neither the thread nor the list scrolls the page sideways.
    await page.setViewportSize({ width: 375, height: 900 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "profile-thread-narrow")
    await page.getByRole("link", { name: "← All threads" }).click()
    await rows.nth(1).waitFor()
    expect(new URL(page.url()).hash).toMatch(/\/threads$/)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "profile-threads-narrow")
    await page.context().close()
  })

  it("opens a thread whose id needs escaping in the address, and says when a profile has none", async () => {
    const user = "thread-escapes"
    const thread = "notes/2024#1?x=%25&y"
    await chatInThread(user, thread, "Remember the milk.")
    const page = await signedIn()
    await openProfile(page, user)
    await page.getByRole("tab", { name: "Threads" }).click()
    await page.getByRole("link", { name: thread, exact: true }).click()
    await page.getByRole("heading", { name: `Thread ${thread}`, level: 2 }).waitFor()
    await page.getByText("answer to Remember the milk.").waitFor()
    // The address holds it escaped, and reloading it shows the same thread.
    expect(new URL(page.url()).hash.split("/").slice(-2)).toEqual(["threads", encodeURIComponent(thread)])
    await page.reload()
    await page.getByText("answer to Remember the milk.").waitFor()

    // A thread the profile does not have: the gateway's refusal, and the way back.
    const unknown = new URL(page.url()).hash.replace(/\/threads\/.*$/, "/threads/unknown")
    await page.evaluate((hash) => {
      location.hash = hash
    }, unknown)
    await page.getByRole("alert").filter({ hasText: "unknown" }).waitFor()
    await page.getByRole("link", { name: "← All threads" }).click()
    await page.getByRole("link", { name: thread, exact: true }).waitFor()

    // A profile with no threads says so.
    await page.getByRole("link", { name: "Profiles", exact: true }).click()
    await openProfile(page, USER)
    await page.getByRole("tab", { name: "Threads" }).click()
    await page.getByText("No threads yet.").waitFor()
    await page.context().close()
  })

  it("moving to another profile's thread of the same name, shows that profile's thread and never the previous one's", async () => {
    const [first, second] = ["thread-hop-a", "thread-hop-b"]
    // Both have a thread named "shared"; the first has another, where the move starts.
    await chatInThread(first, "shared", "The first profile's shared question.")
    await chatInThread(first, "other", "The first profile's other question.")
    await chatInThread(second, "shared", "The second profile's shared question.")
    const idOf = async (externalId: string) =>
      (
        await gw.request<{ profile: { id: string } }>("GET", `/api/profiles/${externalId}`, {
          headers: bearer(ADMIN_KEY)
        })
      ).body.profile.id
    const firstId = await idOf(first)

    const page = await signedIn()
    await openProfile(page, first)
    await page.getByRole("tab", { name: "Threads" }).click()
    await page.getByRole("link", { name: "other", exact: true }).click()
    await page.getByText("answer to The first profile's other question.").waitFor()
    // From here on: whether the first profile's "shared" thread is ever in the page, and what is asked of the API.
    await page.evaluate((text) => {
      const seen = window as unknown as { wrongThreadShown: boolean }
      seen.wrongThreadShown = false
      new MutationObserver(() => {
        if ((document.body.textContent ?? "").includes(text)) seen.wrongThreadShown = true
      }).observe(document.body, { childList: true, subtree: true, characterData: true })
    }, "The first profile's shared question.")
    const requested: Array<string> = []
    page.on("request", (request) => {
      const url = new URL(request.url())
      if (url.pathname.startsWith("/api/")) requested.push(decodeURIComponent(url.pathname))
    })

    // The second profile's "shared" thread, by its address (a bookmark, the browser's history).
    await page.evaluate((hash) => {
      location.hash = hash
    }, `#/profiles/${second}/threads/shared`)
    await page.getByRole("heading", { name: second, level: 1 }).waitFor()
    await page.getByText("answer to The second profile's shared question.").waitFor()
    expect(await page.evaluate(() => (window as unknown as { wrongThreadShown: boolean }).wrongThreadShown)).toBe(false)
    // Nothing was asked of the first profile once the address named the second.
    expect(requested.filter((path) => path.includes(firstId) || path.includes(first))).toEqual([])
    expect(requested).toContain(`/api/profiles/${await idOf(second)}/threads/shared`)
    await page.context().close()
  })

  it("shows a thread's tool calls compactly, and the tool's answer to each", async () => {
    const user = "thread-tools"
    const call = {
      id: "call_weather",
      type: "function",
      function: { name: "get_weather", arguments: '{ "city": "Kyoto", "unit": "celsius" }' }
    }
    up.enqueue({ kind: "json", status: 200, body: completion({ content: null, toolCalls: [call] }) })
    expect((await chatInThread(user, "tools", "What is the weather in Kyoto?")).content).toBeNull()
    // The client sends only the tool's answer: the gateway restores the question and the call before it.
    await chatInThread(user, "tools", "", [{ role: "tool", tool_call_id: "call_weather", content: '{"temp":18}' }])

    const page = await signedIn()
    await openProfile(page, user)
    await page.getByRole("tab", { name: "Threads" }).click()
    await page.getByRole("link", { name: "tools", exact: true }).click()
    const messages = page.getByRole("list", { name: "Thread tools" }).locator(":scope > li")
    await messages.nth(3).waitFor()
    expect(await messages.evaluateAll((items) => items.map((item) => item.getAttribute("data-message-role")))).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant"
    ])
    const calls = messages.nth(1).getByRole("list", { name: "Tool calls" })
    expect(await calls.locator("code.call").textContent()).toBe('get_weather({"city":"Kyoto","unit":"celsius"})')
    await calls.getByText("call_weather").waitFor()
    await messages.nth(2).getByText("answers call_weather").waitFor()
    expect(await messages.nth(3).locator(".content").textContent()).toBe('answer to {"temp":18}')
    await screenshot(page, "profile-thread-tools")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("works at 375 px wide and from the keyboard", async () => {
    const page = await signedIn(375)
    const pageWidth = () => page.evaluate(() => document.scrollingElement!.scrollWidth)
    /** Whether an element is in view, or can be scrolled into view within its own box (not the page's). */
    const reachable = (selector: string) =>
      page.locator(selector).evaluate((element) => {
        const box = element.closest(".scroll")
        const right = element.getBoundingClientRect().right
        return (
          right <= 375 ||
          (box !== null && box.scrollWidth > box.clientWidth && box.getBoundingClientRect().right <= 375)
        )
      })
    // The profile list: every column reachable, the page itself no wider than the screen.
    await page.getByLabel("Find by external id").fill(USER)
    await page.getByRole("link", { name: USER, exact: true }).waitFor()
    expect(await pageWidth()).toBeLessThanOrEqual(375)
    // Every column of the list fits: nothing to scroll to, even in its own box.
    await page.getByRole("columnheader", { name: "Last activity" }).waitFor()
    expect(
      await page.locator("table.profiles").evaluate((table) => {
        const box = table.closest(".scroll")!
        return box.scrollWidth <= box.clientWidth && table.getBoundingClientRect().right <= 375
      })
    ).toBe(true)
    await screenshot(page, "profiles-narrow")
    await openProfile(page, USER)
    // No sideways scrolling of the page itself.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    const summaryTab = page.getByRole("tab", { name: "Summary" })
    await summaryTab.focus()
    await page.keyboard.press("ArrowRight")
    await page.getByRole("tab", { name: "Traits", selected: true }).waitFor()
    expect(new URL(page.url()).hash).toMatch(/\/traits$/)
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Traits")
    await screenshot(page, "profile-narrow")
    expect(await violations(page)).toEqual([])
    // The traits' table scrolls in its box.
    await page.locator("[data-trait]").first().waitFor()
    expect(await pageWidth()).toBeLessThanOrEqual(375)
    expect(await reachable("table.traits th:last-child")).toBe(true)
    await screenshot(page, "traits-narrow")

    // The memories' table too, and a row's editor stays in view.
    await page.getByRole("link", { name: "Profiles", exact: true }).click()
    await openProfile(page, DENSE_USER)
    await page.getByRole("tab", { name: "Memories" }).click()
    await page.locator("[data-memory]").nth(30).waitFor()
    expect(await pageWidth()).toBeLessThanOrEqual(375)
    expect(await reachable("table.memories th:last-child")).toBe(true)
    await page
      .locator("[data-memory]")
      .first()
      .getByRole("button", { name: /^Edit memory/ })
      .click()
    const editor = page.getByRole("form", { name: /^Edit memory/ })
    await editor.getByLabel("Content").and(page.locator(":focus")).waitFor()
    const box = (await editor.boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(375)
    expect(await pageWidth()).toBeLessThanOrEqual(375)
    await screenshot(page, "memories-narrow")
    expect(await violations(page)).toEqual([])

    await page.getByRole("link", { name: "Jobs" }).click()
    await page.locator("[data-job]").first().waitFor()
    expect(await pageWidth()).toBeLessThanOrEqual(375)
    await screenshot(page, "jobs-narrow")
    await page.getByRole("link", { name: "Overview" }).click()
    await page.locator("figure.metric svg").first().waitFor()
    expect(await pageWidth()).toBeLessThanOrEqual(375)
    await screenshot(page, "overview-narrow")
    await page.getByRole("link", { name: "Keys" }).click()
    await page.locator("[data-key]").first().waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "keys-narrow")
    await page.context().close()
  })
})
