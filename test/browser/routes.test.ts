import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchChromium, signedIn as signIn, violations } from "../support/browserConsole.ts"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"

/**
 * The overview's routes in a real browser (Debian's Chromium driven by Playwright, as in
 * `console.test.ts`), against a gateway started with a routes file written to a temporary directory:
 * one model routed to a provider that answers 503 (its breaker opens at the first failure) and, after
 * it, two targets of equal order sharing the load by weight. Screenshots go to `test-results/console/`.
 */

const SCREENSHOTS = "test-results/console"
const ADMIN_KEY = "sk-admin-routes-test"
const APP_KEY = "sk-app-routes-test"

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** The routes file (YAML): `smart` starts at the provider that fails, then shares between two by weight. */
const routesFile = (down: FakeUpstream, up: FakeUpstream, upWeight: number) => `# written by test/browser/routes.test.ts
routes:
  - model: smart
    targets:
      - provider: openai
        model: gpt-down
        baseUrl: ${down.url}
      - provider: openai
        model: gpt-up
        baseUrl: ${up.url}
        apiKeyEnv: SECOND_OPENAI_KEY
        order: 1
        weight: ${upWeight}
        timeoutMs: 30000
      - provider: openai
        model: gpt-spare
        baseUrl: ${up.url}
        order: 1
        retries: 1
  - model: claude
    targets:
      - provider: anthropic
        model: claude-haiku-4-5
`

let dir: string
let file: string
/** Answers every chat completion. */
let up: FakeUpstream
/** Answers every chat completion with 503. */
let down: FakeUpstream
let gw: TestGateway
let browser: Browser
/** The admin key (held in the database) of namespace `a`. */
let namespaceAdmin: string

/** A chat completion for the routed model `smart`; resolves to the target that answered. */
const chat = async () => {
  const response = await gw.request("POST", "/v1/chat/completions", {
    json: { model: "smart", messages: [{ role: "user", content: "Hello" }] },
    headers: { ...bearer(APP_KEY), "x-service-id": "routed-user" }
  })
  expect(response.status).toBe(200)
  return response.headers.get("x-service-upstream")
}

beforeAll(async () => {
  up = await startFakeUpstream()
  down = await startFakeUpstream()
  down.handler = () => ({
    kind: "json",
    status: 503,
    body: { error: { message: "overloaded", type: "server_error", code: null } }
  })
  dir = await mkdtemp(join(tmpdir(), "pmg-routes-console-"))
  file = join(dir, "routes.yaml")
  await writeFile(file, routesFile(down, up, 3))
  gw = await startGateway({
    SERVICE_API_KEY: APP_KEY,
    ADMIN_API_KEY: ADMIN_KEY,
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-upstream-routes-test",
    SECOND_OPENAI_KEY: "sk-second-routes-test",
    ROUTES_FILE: file,
    // One failure opens a breaker, and it stays open for the whole test.
    UPSTREAM_BREAKER_FAILURES: "1",
    UPSTREAM_BREAKER_COOLDOWN_MS: "600000"
  })
  const created = await gw.request<{ key: string }>("POST", "/api/keys", {
    json: { namespace: "a", scope: "admin", label: "a operators" },
    headers: bearer(ADMIN_KEY)
  })
  namespaceAdmin = created.body.key
  // The first request fails at gpt-down (opening its breaker) and is answered by one of the two others.
  expect(await chat()).toMatch(/^openai\/gpt-(up|spare)$/)
  await mkdir(SCREENSHOTS, { recursive: true })
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await gw?.close()
  await up?.close()
  await down?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
})

const screenshot = (page: Page, name: string) => page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true })

/** A page signed in with the key given, at the given width, on the gateway given. */
const signedIn = (width = 1280, key = ADMIN_KEY, gateway = gw) => signIn(browser, gateway.baseUrl, key, width)

const routesSection = (page: Page) => page.getByRole("region", { name: "Routes", exact: true })
/** A target's row in a route's table: its cells' texts, the row header first. */
const cells = (page: Page, route: string, target: string) =>
  routesSection(page)
    .getByRole("table", { name: `Targets of ${route}, in the order they are tried` })
    .locator(`tr[data-target="${target}"]`)
    .locator("th, td")
    .allInnerTexts()

describe("the overview's routes", () => {
  it("lists each routed model's targets in order, with weight, key, retries and breaker, an open one in the warning colour", async () => {
    const page = await signedIn()
    await page.getByRole("link", { name: "Overview" }).click()
    const section = routesSection(page)
    await section.getByRole("heading", { name: "smart", level: 3 }).waitFor()
    await section.getByText(`From ${file}.`).waitFor()
    const smart = section.getByRole("table", { name: "Targets of smart, in the order they are tried" })
    // Order 0 first; the two of order 1 as the file lists them.
    expect(await smart.locator("tbody th").allInnerTexts()).toEqual([
      `openai/gpt-down\n${down.url}`,
      `openai/gpt-up\n${up.url}`,
      `openai/gpt-spare\n${up.url}`
    ])
    expect(await smart.locator("thead th").allInnerTexts()).toEqual([
      "Target",
      "Order",
      "Weight",
      "Key",
      "Timeout",
      "Retries",
      "Breaker",
      "Attempts /min",
      "Failed",
      "Retries /min",
      "Fallbacks /min"
    ])
    const [, ...down0] = await cells(page, "smart", "openai/gpt-down")
    expect(down0.slice(0, 6)).toEqual(["0", "1", "provider's", "default", "0", "Open"])
    const [, ...up1] = await cells(page, "smart", "openai/gpt-up")
    expect(up1.slice(0, 6)).toEqual(["1", "3\n75 % of first tries", "SECOND_OPENAI_KEY", "30000 ms", "0", "Closed"])
    const [, ...spare1] = await cells(page, "smart", "openai/gpt-spare")
    expect(spare1.slice(0, 6)).toEqual(["1", "1\n25 % of first tries", "provider's", "default", "1", "Closed"])
    // The open breaker in the warning colour (white on the danger red), its row tinted.
    const open = smart.locator('tr[data-target="openai/gpt-down"] .badge')
    expect(await open.evaluate((badge) => getComputedStyle(badge).backgroundColor)).toBe("rgb(179, 38, 30)")
    expect(await open.evaluate((badge) => getComputedStyle(badge).color)).toBe("rgb(255, 255, 255)")
    const closed = smart.locator('tr[data-target="openai/gpt-up"] .badge')
    expect(await closed.evaluate((badge) => getComputedStyle(badge).backgroundColor)).not.toBe("rgb(179, 38, 30)")
    // A route whose target has no key here is listed all the same.
    expect((await cells(page, "claude", "anthropic/claude-haiku-4-5")).slice(1, 7)).toEqual([
      "0",
      "1",
      "provider's",
      "default",
      "0",
      "Closed"
    ])

    // Traffic after the first reading: the passed-by target's fallbacks, the others' attempts, as rates.
    for (let i = 0; i < 6; i++) await chat()
    const fallbacks = async () => Number((await cells(page, "smart", "openai/gpt-down"))[10])
    await expect.poll(fallbacks, { timeout: 20_000, interval: 500 }).toBeGreaterThan(0)
    await section.getByText(/rates are per minute since \d{2}:\d{2}\./).waitFor()
    const [upRow, spareRow] = [
      await cells(page, "smart", "openai/gpt-up"),
      await cells(page, "smart", "openai/gpt-spare")
    ]
    // Every attempt at them was answered; gpt-down, passed by, was not tried again.
    expect(Number(upRow[7]) + Number(spareRow[7])).toBeGreaterThan(0)
    for (const row of [upRow, spareRow]) expect(["0 %", "—"]).toContain(row[8])
    expect((await cells(page, "smart", "openai/gpt-down"))[7]).toBe("0.0")
    await screenshot(page, "overview-routes")
    expect(await violations(page)).toEqual([])

    // A reload (here POST /api/routes/reload; a change to the file or SIGHUP does the same) shows at the next
    // reading, and the target that stays keeps its open breaker.
    await writeFile(file, routesFile(down, up, 1))
    expect((await gw.request("POST", "/api/routes/reload", { headers: bearer(ADMIN_KEY) })).status).toBe(200)
    await expect
      .poll(async () => (await cells(page, "smart", "openai/gpt-up"))[2], { timeout: 15_000, interval: 500 })
      .toBe("1\n50 % of first tries")
    expect((await cells(page, "smart", "openai/gpt-down"))[6]).toBe("Open")
    await page.context().close()
  })

  it("shows the routes whichever namespace the global admin has chosen, and fits 375 px", async () => {
    const page = await signedIn(375)
    await page.getByLabel("Namespace", { exact: true }).selectOption("a")
    await page.getByRole("link", { name: "Overview" }).click()
    await routesSection(page).getByRole("heading", { name: "smart", level: 3 }).waitFor()
    // The table scrolls in its own box; the page itself never scrolls sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375)
    await screenshot(page, "overview-routes-narrow")
    await page.context().close()
  })

  it("gives a namespace's own admin key a quiet note, not an error", async () => {
    const page = await signedIn(1280, namespaceAdmin)
    // No Overview link for it; the address still leads there.
    expect(await page.getByRole("link", { name: "Overview" }).count()).toBe(0)
    await page.evaluate(() => {
      location.hash = "#/overview"
    })
    const section = routesSection(page)
    await section.getByText("The routes are the global admin's").waitFor()
    expect(await section.getByRole("alert").count()).toBe(0)
    expect(await section.getByRole("table").count()).toBe(0)
    await page.context().close()
  })

  it("says so when the gateway has no routes file", async () => {
    const plain = await startGateway({ ADMIN_API_KEY: ADMIN_KEY, UPSTREAM_BASE_URL: up.url })
    try {
      const page = await signedIn(1280, ADMIN_KEY, plain)
      await page.getByRole("link", { name: "Overview" }).click()
      await routesSection(page).getByText("No routes file (ROUTES_FILE is not set)").waitFor()
      expect(await routesSection(page).getByRole("table").count()).toBe(0)
      await page.context().close()
    } finally {
      await plain.close()
    }
  })
})
