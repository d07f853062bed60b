import { createHmac } from "node:crypto"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { signatureHeader, verifyWebhookSignature } from "../../src/webhooks/signature.ts"

const SECRET = "whsec_test-secret"
const NOW = Date.parse("2026-11-26T12:00:00Z")
const T = NOW / 1000

describe("webhook signatures", () => {
  it("is the documented scheme: t=<unix>,v1=<hex HMAC-SHA256 of '<t>.<body>'>", () => {
    const body = '{"id":"evt_1"}'
    const expected = createHmac("sha256", SECRET).update(`${T}.${body}`).digest("hex")
    expect(signatureHeader(SECRET, body, T)).toBe(`t=${T},v1=${expected}`)
  })

  it("verifies what it signs, for any body, and nothing altered", () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (body, extra) => {
        const header = signatureHeader(SECRET, body, T)
        expect(verifyWebhookSignature({ secret: SECRET, header, body, now: NOW })).toBe(true)
        expect(verifyWebhookSignature({ secret: SECRET, header, body: body + extra, now: NOW })).toBe(false)
        expect(verifyWebhookSignature({ secret: SECRET + extra, header, body, now: NOW })).toBe(false)
      })
    )
  })

  it("takes the raw bytes as well as text", () => {
    const body = '{"content":"café"}'
    const header = signatureHeader(SECRET, body, T)
    expect(verifyWebhookSignature({ secret: SECRET, header, body: Buffer.from(body), now: NOW })).toBe(true)
  })

  it("refuses a timestamp outside the tolerance (a replayed capture), either way", () => {
    const header = signatureHeader(SECRET, "{}", T)
    expect(verifyWebhookSignature({ secret: SECRET, header, body: "{}", now: NOW + 299_000 })).toBe(true)
    expect(verifyWebhookSignature({ secret: SECRET, header, body: "{}", now: NOW + 301_000 })).toBe(false)
    expect(verifyWebhookSignature({ secret: SECRET, header, body: "{}", now: NOW - 301_000 })).toBe(false)
    expect(
      verifyWebhookSignature({ secret: SECRET, header, body: "{}", now: NOW + 3_000_000, toleranceSeconds: 3600 })
    ).toBe(true)
  })

  it("accepts any one matching v1 among several (a secret being rotated)", () => {
    const good = signatureHeader(SECRET, "{}", T).split(",")[1]!
    const header = `t=${T},v1=${"0".repeat(64)},${good}`
    expect(verifyWebhookSignature({ secret: SECRET, header, body: "{}", now: NOW })).toBe(true)
  })

  it("refuses malformed or missing headers", () => {
    for (const header of [undefined, null, "", "v1=abc", `t=${T}`, `t=abc,v1=${"0".repeat(64)}`, `t=${T},v1=xyz`])
      expect(verifyWebhookSignature({ secret: SECRET, header, body: "{}", now: NOW })).toBe(false)
  })
})
