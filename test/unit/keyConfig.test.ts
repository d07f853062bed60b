import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { IpNetwork } from "effect/net"
import { appConfigFromEnv } from "../../src/app/AppConfig.ts"

const read = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      return yield* appConfigFromEnv
    }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))))
  )

const failure = (env: Record<string, string>) =>
  read(env).then(
    () => "started",
    (error: unknown) => String(error)
  )

describe("key and limit settings", () => {
  it("reads SERVICE_API_KEY and ADMIN_API_KEY as lists, ignoring blanks, and keeps them redacted", async () => {
    const config = await read({ SERVICE_API_KEY: " sk-old , ,sk-new,", ADMIN_API_KEY: "sk-admin" })
    expect(config.auth.serviceApiKeys.map(Redacted.value)).toEqual(["sk-old", "sk-new"])
    expect(config.auth.adminApiKeys.map(Redacted.value)).toEqual(["sk-admin"])
    expect(JSON.stringify(config)).not.toContain("sk-")
    expect((await read({ SERVICE_API_KEY: " , " })).auth.serviceApiKeys).toEqual([])
  })

  it("has the documented defaults: the wrong-key and management limits on, the others off", async () => {
    const config = await read({})
    expect(config.rateLimits).toEqual({
      userPerMinute: 0,
      keyPerMinute: 0,
      apiClientPerMinute: 1200,
      authFailuresPerMinute: 10,
      replicas: 1
    })
    expect(config.extraction.profileJobsPerHour).toBe(120)
    expect(config.server.trustedProxies).toEqual([])
  })

  it("reads TRUSTED_PROXIES as addresses and CIDR networks, and refuses anything else naming the variable", async () => {
    const config = await read({ TRUSTED_PROXIES: "10.0.0.0/8, 192.168.1.7 ,fd00::/8" })
    expect(config.server.trustedProxies.map(IpNetwork.format)).toEqual(["10.0.0.0/8", "192.168.1.7/32", "fd00::/8"])
    expect(await failure({ TRUSTED_PROXIES: "10.0.0.0/8,proxy.internal" })).toContain("TRUSTED_PROXIES")
    expect(await failure({ RATE_LIMIT_REPLICAS: "0" })).toContain("RATE_LIMIT_REPLICAS")
    expect(await failure({ RATE_LIMIT_KEY_PER_MINUTE: "-1" })).toContain("RATE_LIMIT_KEY_PER_MINUTE")
  })

  it("reads CORS_ORIGINS as origins (off when unset), and refuses a path or another scheme naming the variable", async () => {
    expect((await read({})).server.corsOrigins).toEqual([])
    expect(
      (await read({ CORS_ORIGINS: " https://app.example.com, http://localhost:5173 ," })).server.corsOrigins
    ).toEqual(["https://app.example.com", "http://localhost:5173"])
    expect((await read({ CORS_ORIGINS: "*" })).server.corsOrigins).toEqual(["*"])
    for (const bad of [
      "https://app.example.com/",
      "https://app.example.com/page",
      "app.example.com",
      "ftp://files.example.com"
    ]) {
      expect(await failure({ CORS_ORIGINS: bad })).toContain("CORS_ORIGINS")
    }
  })
})
