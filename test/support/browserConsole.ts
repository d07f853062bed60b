import { createRequire } from "node:module"
import { type Browser, chromium, type Page } from "playwright-core"

/** The console's browser tests drive Debian's Chromium (Playwright's own download cannot work here). */
const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"

export const launchChromium = () =>
  chromium.launch({
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

/** A page of the console at `baseUrl`, signed in with `key`, on its Profiles page. */
export const signedIn = async (browser: Browser, baseUrl: string, key: string, width = 1280) => {
  // The console forbids scripts from elsewhere; the accessibility checker is injected past that rule.
  const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true })
  const page = await context.newPage()
  await page.goto(baseUrl)
  await page.getByLabel("Admin key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { name: "Profiles" }).waitFor()
  return page
}

/** Accessibility violations axe-core finds on the page as it is (WCAG 2 A and AA: labels, contrast, roles). */
export const violations = async (page: Page) => {
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
