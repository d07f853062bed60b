import { describe, expect, it } from "vitest"
import { isPublicAddress, literalAddress, urlProblem } from "../../src/webhooks/webhookUrl.ts"

describe("which addresses a webhook may reach", () => {
  it("refuses loopback, private, link-local, shared, multicast and reserved addresses", () => {
    for (const address of [
      "127.0.0.1",
      "127.8.9.10",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "fc00::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:8.8.8.8",
      "64:ff9b::a00:1",
      "not an address"
    ])
      expect([address, isPublicAddress(address)]).toEqual([address, false])
  })

  it("allows public unicast addresses", () => {
    for (const address of [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "192.169.0.1",
      "2606:4700:4700::1111",
      "2001:4860::8888"
    ])
      expect([address, isPublicAddress(address)]).toEqual([address, true])
  })

  it("reads a literal address out of a URL's host", () => {
    expect(literalAddress("[::1]")).toBe("::1")
    expect(literalAddress("127.0.0.1")).toBe("127.0.0.1")
    expect(literalAddress("example.com")).toBeUndefined()
  })

  it("accepts plain http(s) URLs and says what is wrong with others", () => {
    expect(urlProblem("https://hooks.example.com/gateway?app=1")).toBeUndefined()
    expect(urlProblem("http://hooks.example.com:8080/x")).toBeUndefined()
    for (const url of [
      "hooks.example.com",
      "ftp://example.com",
      "javascript:alert(1)",
      "https://user:pass@example.com/",
      "https://example.com/#frag",
      `https://example.com/${"a".repeat(2000)}`
    ])
      expect(urlProblem(url)?.code).toBe("invalid_url")
  })
})
