import { describe, expect, it } from "vitest"
import { exceededPower, inheritedPowers, type KeyPowers } from "../../src/keys/keyHierarchy.ts"

const at = (iso: string) => Date.parse(iso)
const limited: KeyPowers = { scope: "admin", expiresAt: at("2026-12-01T00:00:00Z"), rateLimitPerMinute: 5 }
const unlimited: KeyPowers = { scope: "admin", expiresAt: null, rateLimitPerMinute: null }

describe("what a key passes on to the keys it creates", () => {
  it("gives what is left out from the creator, and what was asked for as asked", () => {
    expect(inheritedPowers(limited, { scope: "app", expiresAt: undefined, rateLimitPerMinute: undefined })).toEqual({
      scope: "app",
      expiresAt: limited.expiresAt,
      rateLimitPerMinute: 5
    })
    expect(
      inheritedPowers(limited, { scope: "admin", expiresAt: at("2026-11-30T00:00:00Z"), rateLimitPerMinute: 2 })
    ).toEqual({ scope: "admin", expiresAt: at("2026-11-30T00:00:00Z"), rateLimitPerMinute: 2 })
    // `null` asks for none, whatever the creator has (exceededPower then refuses it under a limited creator).
    expect(inheritedPowers(limited, { scope: "app", expiresAt: null, rateLimitPerMinute: null })).toEqual({
      scope: "app",
      expiresAt: null,
      rateLimitPerMinute: null
    })
  })

  it("passes nothing on from the root (the environment's admin key)", () => {
    expect(inheritedPowers(undefined, { scope: "admin", expiresAt: undefined, rateLimitPerMinute: undefined })).toEqual(
      unlimited
    )
  })

  it("lets a child have as much as its creator, or less", () => {
    expect(exceededPower(limited, limited)).toBeUndefined()
    expect(
      exceededPower(limited, { scope: "app", expiresAt: at("2026-11-01T00:00:00Z"), rateLimitPerMinute: 1 })
    ).toBeUndefined()
    expect(exceededPower(unlimited, unlimited)).toBeUndefined()
    expect(exceededPower(unlimited, limited)).toBeUndefined()
    expect(exceededPower(undefined, unlimited)).toBeUndefined()
  })

  it("names the expiry when the child would outlive its creator, or never expire under one that does", () => {
    const later = exceededPower(limited, { ...limited, expiresAt: at("2026-12-01T00:00:01Z") })
    expect(later).toMatchObject({ param: "expiresAt" })
    expect(later!.message).toContain("2026-12-01T00:00:00.000Z")
    expect(exceededPower(limited, { ...limited, expiresAt: null })).toMatchObject({ param: "expiresAt" })
  })

  it("names the limit when the child would be allowed more requests, or have no limit under one that has", () => {
    const higher = exceededPower(limited, { ...limited, rateLimitPerMinute: 6 })
    expect(higher).toMatchObject({ param: "rateLimitPerMinute" })
    expect(higher!.message).toContain("5 requests a minute")
    expect(exceededPower(limited, { ...limited, rateLimitPerMinute: null })).toMatchObject({
      param: "rateLimitPerMinute"
    })
  })

  it("never lets an app key make an admin key", () => {
    expect(exceededPower({ ...unlimited, scope: "app" }, unlimited)).toMatchObject({ param: "scope" })
    expect(exceededPower({ ...unlimited, scope: "app" }, { ...unlimited, scope: "app" })).toBeUndefined()
  })
})
