import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError, type TraitJson } from "./support/wire.ts"

let dir: string
let gw: TestGateway
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gateway-traits-"))
  const file = join(dir, "traits.json")
  await writeFile(
    file,
    JSON.stringify({
      plan: { type: "string", enum: ["free", "pro"], category: "billing", description: "Subscription plan" },
      scores: { type: "array", items: { type: "number" } },
      onboarding: { type: "object", category: "context" }
    })
  )
  gw = await startGateway({ TRAITS_FILE: file })
  await gw.request("POST", "/api/profiles", { json: { externalId: "custom-schema" } })
})
afterAll(async () => {
  await gw.close()
  await rm(dir, { recursive: true, force: true })
})

const put = (key: string, value: unknown) =>
  gw.request<{ trait: TraitJson }>("PUT", `/api/profiles/custom-schema/traits/${key}`, { json: { value } })

describe("TRAITS_FILE", () => {
  it("replaces the built-in trait schema", async () => {
    expect((await put("plan", "pro")).body.trait).toMatchObject({ valueType: "enum", category: "billing" })
    expectError(await put("plan", "enterprise"), 400, "invalid_trait_value")
    expect((await put("scores", [9, 10])).body.trait).toMatchObject({ valueType: "array", value: [9, 10] })
    expectError(await put("scores", ["nine"]), 400, "invalid_trait_value")
    expect((await put("onboarding", { step: 2 })).body.trait.valueType).toBe("object")
    expectError(await put("onboarding", [1]), 400, "invalid_trait_value")
  })

  it("lists the schema in force at /api/trait-definitions, an enum with its allowed values", async () => {
    const listed = await gw.request<{ definitions: Array<{ key: string; valueType: string; enumValues: string[] }> }>(
      "GET",
      "/api/trait-definitions"
    )
    expect(listed.status).toBe(200)
    expect(listed.body.definitions.find((d) => d.key === "plan")).toMatchObject({
      valueType: "enum",
      enumValues: ["free", "pro"],
      category: "billing",
      description: "Subscription plan"
    })
    expect(listed.body.definitions.map((d) => d.key)).not.toContain("expertise_level")
  })

  it("treats the built-in keys as undeclared", async () => {
    // expertise_level is an enum by default; here it is just a string typed by its first value.
    expect((await put("expertise_level", "wizard")).body.trait).toMatchObject({
      valueType: "string",
      category: "custom"
    })
  })
})
