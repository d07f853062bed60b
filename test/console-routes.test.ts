import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

/** The console's files as the gateway serves them (the console itself runs in `npm run test:browser`). */

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ SERVICE_API_KEY: "sk-app-files", ADMIN_API_KEY: "sk-admin-files" })
})
afterAll(() => gw.close())

describe("the console's files", () => {
  it("are served without a key (they hold no data) from / and /console, and locked down", async () => {
    const root = await fetch(`${gw.baseUrl}/`, { redirect: "manual" })
    expect(root.status).toBe(302)
    expect(root.headers.get("location")).toBe("/console/")
    for (const path of ["/console", "/console/"]) {
      const page = await gw.request<string>("GET", path)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(page.text).toContain(`<script type="module" src="/console/app.js">`)
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(page.headers.get("x-content-type-options")).toBe("nosniff")
    }
    const script = await gw.request<string>("GET", "/console/app.js")
    expect(script.status).toBe(200)
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
  })

  it("are revalidated by ETag, and nothing but the built files is served", async () => {
    const first = await gw.request("GET", "/console/app.css")
    const etag = first.headers.get("etag")!
    expect(first.headers.get("cache-control")).toBe("no-cache")
    const again = await fetch(`${gw.baseUrl}/console/app.css`, { headers: { "if-none-match": etag } })
    expect(again.status).toBe(304)
    expectError(await gw.request("GET", "/console/missing.js"), 404, "not_found")
    expectError(await gw.request("GET", "/console/..%2fpackage.json"), 404, "not_found")
    // The data behind the console still needs the admin key.
    expectError(await gw.request("GET", "/api/profiles"), 401, "missing_api_key")
  })
})
