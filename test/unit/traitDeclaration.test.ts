import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { PerRequestTrait } from "../../src/domain/PerRequestTrait.ts"
import { toDefinition } from "../../src/domain/TraitDeclaration.ts"
import { TraitSchemaFile, toDefinitions } from "../../src/domain/TraitSchemaFile.ts"

const fromFile = (entry: Record<string, unknown>) =>
  Result.getOrThrow(toDefinitions(Schema.decodeUnknownSync(TraitSchemaFile)({ mood: entry })))[0]!

const perRequest = Schema.decodeUnknownSync(PerRequestTrait)
const fromRequest = (trait: PerRequestTrait) => toDefinition(trait.key, trait.valueType, trait)

const declaration = {
  enum: ["calm", "stressed"],
  description: "How the user feels",
  category: "context",
  extraction: { enabled: false },
  injection: { enabled: true, template: "The user feels {{value}}." },
  behaviour: "mood-plugin"
}

describe("a trait declaration", () => {
  it("means the same definition in TRAITS_FILE and per request", () => {
    expect(fromRequest(perRequest({ key: "mood", valueType: "enum", ...declaration }))).toEqual(
      fromFile({ type: "enum", ...declaration })
    )
    expect(fromRequest(perRequest({ key: "mood", valueType: "array", items: { type: "number" } }))).toEqual(
      fromFile({ type: "array", items: { type: "number" } })
    )
  })

  it("gets the defaults for what neither form states", () => {
    expect(fromFile({ type: "string" })).toMatchObject({
      valueType: "string",
      enumValues: [],
      itemType: "string",
      category: "custom",
      description: "",
      extractionEnabled: true,
      injectionEnabled: true,
      injectionTemplate: "mood: {{value}}",
      behaviour: null
    })
  })

  it("per request, keeps what the configured declaration of the key says unless it says otherwise", () => {
    const configured = fromFile({ type: "enum", ...declaration })
    const trait = perRequest({ key: "mood", valueType: "enum", enum: ["happy"], injection: { enabled: false } })
    expect(toDefinition(trait.key, trait.valueType, trait, configured)).toMatchObject({
      enumValues: ["happy"],
      injectionEnabled: false,
      injectionTemplate: "The user feels {{value}}.",
      category: "context",
      extractionEnabled: false,
      behaviour: "mood-plugin"
    })
  })

  it("per request, bounds the free text that the operator's file may make as long as it likes", () => {
    const long = "x".repeat(1001)
    expect(fromFile({ type: "string", description: long }).description).toBe(long)
    expect(() => perRequest({ key: "mood", valueType: "string", description: long })).toThrow()
    expect(() => perRequest({ key: "mood", valueType: "string", category: "c".repeat(65) })).toThrow()
  })
})
