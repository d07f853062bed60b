import { mkdir } from "node:fs/promises"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchChromium, signedIn as signIn, violations } from "../support/browserConsole.ts"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"

/**
 * The console's Settings page in a real browser (Debian's Chromium driven by Playwright, as in
 * `console.test.ts`): a namespace's extraction instructions, memory categories, trait schema and retention,
 * saved with `PUT /api/namespaces/{name}/settings` and read back from the API. Screenshots go to
 * `test-results/console/`.
 */

const SCREENSHOTS = "test-results/console"
const ADMIN_KEY = "sk-admin-settings-console-test"

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

interface Settings {
  readonly extractionInstructions: string
  readonly memoryCategories: ReadonlyArray<{ readonly name: string; readonly description: string }>
  readonly traitSchema: Record<string, unknown> | null
  readonly retention: { readonly turnsDays?: number; readonly memoryDays?: Record<string, number> }
  readonly updatedAt: string | null
}

let up: FakeUpstream
let gw: TestGateway
let browser: Browser
/** The admin key (held in the database) of namespace `team`. */
let teamAdmin: string

beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ ADMIN_API_KEY: ADMIN_KEY, UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-up" })
  const created = await gw.request<{ key: string }>("POST", "/api/keys", {
    json: { namespace: "team", scope: "admin", label: "team operators" },
    headers: bearer(ADMIN_KEY)
  })
  teamAdmin = created.body.key
  await mkdir(SCREENSHOTS, { recursive: true })
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await gw?.close()
  await up?.close()
})

const screenshot = (page: Page, name: string) => page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true })

/** What the API holds for the namespace. */
const stored = async (namespace: string) => {
  const response = await gw.request<Settings>("GET", `/api/namespaces/${namespace}/settings`, {
    headers: bearer(ADMIN_KEY)
  })
  expect(response.status).toBe(200)
  return response.body
}

/** The Settings page, signed in with the key given, on the namespace named (the global admin's picker). */
const openSettings = async (namespace: string | null, key = ADMIN_KEY, width = 1280) => {
  const page = await signIn(browser, gw.baseUrl, key, width)
  await page.getByRole("link", { name: "Settings" }).click()
  await page.getByRole("heading", { name: "Settings", level: 1 }).waitFor()
  if (namespace !== null) {
    await page.getByLabel("Settings of namespace").fill(namespace)
    await page.getByRole("button", { name: "Open" }).click()
    await page.getByRole("heading", { name: `Namespace ${namespace}`, level: 2 }).waitFor()
  }
  await page.getByRole("button", { name: "Save settings" }).waitFor()
  return page
}

/** Every call the page makes to the API from now on: method and path. */
const recordRequests = (page: Page) => {
  const requested: Array<string> = []
  page.on("request", (request) => {
    const url = new URL(request.url())
    if (url.pathname.startsWith("/api/")) requested.push(`${request.method()} ${decodeURIComponent(url.pathname)}`)
  })
  return requested
}

describe("the console's Settings page", () => {
  it("saves a namespace's instructions, categories and retention, stored as sent and shown as saved", async () => {
    const page = await openSettings("shop")
    await page.getByText("Never: the defaults").waitFor()
    await page.getByText("None has removed anything yet").waitFor()
    await page.getByLabel("Extraction instructions").fill("Note every product the user owns, with its model number.")
    await page.getByRole("button", { name: "Add category" }).click()
    // The new row's name takes focus.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("settings-category-name-0")
    await page.getByLabel("Name of category 1").fill("product")
    await page.getByLabel("Description of category 1").fill("Products the user owns or wants")
    await page.getByLabel("Turns kept (days)").fill("30")
    await page.getByLabel("Event memories (days)").fill("90")
    await page.getByRole("button", { name: "Save settings" }).click()
    await page
      .getByRole("status")
      .getByText(/^Saved /)
      .waitFor()

    const settings = await stored("shop")
    expect(settings).toMatchObject({
      extractionInstructions: "Note every product the user owns, with its model number.",
      memoryCategories: [{ name: "product", description: "Products the user owns or wants" }],
      traitSchema: null,
      retention: { turnsDays: 30, memoryDays: { event: 90 } }
    })
    expect(settings.updatedAt).not.toBeNull()
    // The page shows what the gateway answered: saved now, the fields as stored.
    expect(await page.getByText("Never: the defaults").count()).toBe(0)
    expect(await page.locator("[data-updated-at] time").getAttribute("datetime")).toBe(settings.updatedAt)
    expect(await page.getByLabel("Name of category 1").inputValue()).toBe("product")
    expect(await page.getByLabel("Fact memories (days)").inputValue()).toBe("")
    await screenshot(page, "settings")
    expect(await violations(page)).toEqual([])

    // Opened again, the page reads them back; a category removed is gone from what is saved.
    await page.reload()
    await page.getByLabel("Settings of namespace").fill("shop")
    await page.getByRole("button", { name: "Open" }).click()
    await expect.poll(() => page.getByLabel("Turns kept (days)").inputValue()).toBe("30")
    await page.getByRole("button", { name: "Remove category 1" }).click()
    await page.getByText("No categories.").waitFor()
    await page.getByRole("button", { name: "Save settings" }).click()
    await page
      .getByRole("status")
      .getByText(/^Saved /)
      .waitFor()
    expect((await stored("shop")).memoryCategories).toEqual([])
    await page.context().close()
  })

  it("says the gateway's refusal of a category name beside the form, the field marked, and stores nothing", async () => {
    const page = await openSettings("refused")
    await page.getByRole("button", { name: "Add category" }).click()
    await page.getByLabel("Name of category 1").fill("has space")
    await page.getByRole("button", { name: "Save settings" }).click()
    const alert = page.getByRole("alert")
    await alert.waitFor()
    expect(await alert.textContent()).toContain("memoryCategories")
    const name = page.getByLabel("Name of category 1")
    expect(await name.getAttribute("aria-invalid")).toBe("true")
    expect(await name.getAttribute("aria-describedby")).toContain("settings-error")
    expect(await page.getByRole("status").textContent()).toBe("")
    expect(await stored("refused")).toMatchObject({ memoryCategories: [], updatedAt: null })
    await screenshot(page, "settings-refused")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("catches a trait schema that is not JSON before sending anything, then saves one that is", async () => {
    const page = await openSettings("typed")
    const requested = recordRequests(page)
    const schema = page.getByLabel("Trait schema (JSON)")
    await schema.fill('{ "plan": { "type": "enum", "enum": ["free", "pro"] ')
    await page.getByRole("button", { name: "Save settings" }).click()
    const alert = page.getByRole("alert")
    await alert.waitFor()
    expect(await alert.textContent()).toContain("The trait schema is not valid JSON")
    expect(await schema.getAttribute("aria-invalid")).toBe("true")
    // Focus goes to the field to fix (once the error has rendered).
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("settings-trait-schema")
    expect(requested.filter((call) => call.startsWith("PUT") || call.startsWith("PATCH"))).toEqual([])
    expect(await stored("typed")).toMatchObject({ traitSchema: null, updatedAt: null })
    expect(await violations(page)).toEqual([])

    // Fixed, it is saved, and the traits in force in the namespace are its own.
    await schema.fill('{ "plan": { "type": "enum", "enum": ["free", "pro"], "description": "The user\'s plan" } }')
    await page.getByRole("button", { name: "Save settings" }).click()
    await page
      .getByRole("status")
      .getByText(/^Saved /)
      .waitFor()
    expect(await page.getByRole("alert").count()).toBe(0)
    expect(requested).toContain("PUT /api/namespaces/typed/settings")
    expect((await stored("typed")).traitSchema).toMatchObject({ plan: { type: "enum", enum: ["free", "pro"] } })
    await page.getByRole("button", { name: "Show the traits in force" }).click()
    const inForce = page.getByRole("table", { name: "Traits in force in typed" })
    // Every replica takes a saved schema up within a second: read again until it is in force.
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "Refresh the traits in force" }).click()
          return inForce.getByRole("rowheader", { name: "plan" }).count()
        },
        { timeout: 10_000, interval: 500 }
      )
      .toBe(1)
    expect(await inForce.locator("tbody tr").count()).toBe(1)
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })

  it("opens a namespace's own admin key on its namespace, and fits 375 px", async () => {
    const page = await openSettings(null, teamAdmin, 375)
    await page.getByRole("heading", { name: "Namespace team", level: 2 }).waitFor()
    expect(await page.getByLabel("Settings of namespace").count()).toBe(0)
    await page.getByLabel("Context memories (days)").fill("7")
    await page.getByRole("button", { name: "Save settings" }).click()
    await page
      .getByRole("status")
      .getByText(/^Saved /)
      .waitFor()
    expect((await stored("team")).retention).toEqual({ memoryDays: { context: 7 } })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "settings-narrow")
    expect(await violations(page)).toEqual([])
    await page.context().close()
  })
})
