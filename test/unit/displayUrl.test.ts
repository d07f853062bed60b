import { describe, expect, it } from "vitest"
import { displayUrl, withDisplayUrls } from "../../src/config/displayUrl.ts"

describe("URLs in reports and logs", () => {
  it("never show credentials, a query or a fragment", () => {
    expect(displayUrl("https://user:secret@api.example.com/v1?api-key=sk-1#x")).toBe("https://api.example.com/v1")
    expect(displayUrl("http://127.0.0.1:9")).toBe("http://127.0.0.1:9")
    expect(displayUrl("not a url")).toBe("(an invalid URL)")
    expect(withDisplayUrls("Transport error (GET https://u:p@h.example/v1/models?key=k)")).toBe(
      "Transport error (GET https://h.example/v1/models)"
    )
  })
})
