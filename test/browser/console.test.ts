import { mkdir } from "node:fs/promises"
import { createRequire } from "node:module"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "../support/gateway.ts"

/**
 * The web console in a real browser: Debian's Chromium (`apt-get install chromium`) driven by
 * Playwright, against the real gateway on the run's embedded PostgreSQL. Screenshots of every page
 * are kept in `test-results/console/`.
 */

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
const SCREENSHOTS = "test-results/console"
const ADMIN_KEY = "sk-admin-console-test"
const USER = "console-user"

let gw: TestGateway
let browser: Browser
beforeAll(async () => {
  gw = await startGateway({ SERVICE_API_KEY: "sk-app-console-test", ADMIN_API_KEY: ADMIN_KEY })
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
  await mkdir(SCREENSHOTS, { recursive: true })
  browser = await chromium.launch({
    executablePath: CHROMIUM,
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
})
afterAll(async () => {
  await browser?.close()
  await gw?.close()
})

const screenshot = (page: Page, name: string) => page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true })

/** A page signed in with the admin key, at the given width. */
const signedIn = async (width = 1280) => {
  // The console forbids scripts from elsewhere; the accessibility checker is injected past that rule.
  const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true })
  const page = await context.newPage()
  await page.goto(gw.baseUrl)
  await page.getByLabel("Admin key").fill(ADMIN_KEY)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { name: "Profiles" }).waitFor()
  return page
}

/** Accessibility violations axe-core finds on the page as it is (WCAG 2 A and AA: labels, contrast, roles). */
const violations = async (page: Page) => {
  await page.addScriptTag({ path: createRequire(import.meta.url).resolve("axe-core/axe.min.js") })
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run: (options: object) => Promise<{ violations: Array<{ id: string; nodes: Array<unknown> }> }> }
      }
    ).axe
    const result = await axe.run({ runOnly: { type: "tag", values: ["wcag2a", "wcag2aa"] } })
    return result.violations.map((violation) => `${violation.id} (${violation.nodes.length})`)
  })
}

const openProfile = async (page: Page, externalId: string) => {
  await page.getByLabel("Find by external id").fill(externalId)
  await page.getByRole("link", { name: externalId, exact: true }).click()
  await page.getByRole("heading", { name: externalId, level: 1 }).waitFor()
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

  it("edits a trait inline, shows the refusal of a value its type does not allow, and the preview follows", async () => {
    const page = await signedIn()
    await openProfile(page, USER)
    await page.getByRole("tab", { name: "Traits" }).click()
    await page.getByRole("button", { name: "Edit expertise_level" }).click()
    const field = page.getByLabel("Value (enum)")
    await field.fill("wizard")
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByRole("alert").filter({ hasText: "expertise_level" }).waitFor()
    expect(await trait("expertise_level")).toBe("beginner")
    await screenshot(page, "trait-refused")
    await field.fill("expert")
    await page.getByRole("button", { name: "Save" }).click()
    await page.locator("[data-trait=expertise_level] .value").filter({ hasText: "expert" }).waitFor()
    expect(await trait("expertise_level")).toBe("expert")

    await page.getByRole("tab", { name: "What would be injected" }).click()
    await page.getByLabel("A message from this user").fill("What should I cook with peanuts?")
    await page.getByRole("button", { name: "Preview" }).click()
    const block = page.getByTestId("preview-block")
    await block.filter({ hasText: "expert" }).waitFor()
    expect(await block.textContent()).toContain("Allergic to peanuts")
    await screenshot(page, "preview")
    expect(await violations(page)).toEqual([])
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

  it("retries a failed job from the jobs page", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Jobs" }).click()
    const row = page.locator("[data-job]").filter({ hasText: "down" })
    await row.waitFor()
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

  it("draws the overview from /metrics", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Overview" }).click()
    await page.getByText("Requests per second").waitFor()
    // Two readings make a rate: the chart then has a value.
    await page
      .locator("figure.metric")
      .filter({ hasText: "Requests per second" })
      .locator("strong")
      .filter({ hasText: /\d/ })
      .waitFor({ timeout: 20_000 })
    await screenshot(page, "overview")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("works at 375 px wide and from the keyboard", async () => {
    const page = await signedIn(375)
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
    await page.context().close()
  })
})
