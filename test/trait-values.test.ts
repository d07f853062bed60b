import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Redacted, Result } from "effect"
import { ServiceAuth } from "../src/auth/ServiceAuth.ts"
import { toDefinitions } from "../src/domain/TraitSchemaFile.ts"
import { builtinValueTypes } from "../src/plugins/builtin/valueTypes.ts"
import { escapeLikePattern } from "../src/profiles/ProfilesRepo.ts"
import { defaultTraitSchema } from "../src/traits/defaultTraitSchema.ts"
import { TraitSchema } from "../src/traits/TraitSchema.ts"
import { validateTraitValue as validate } from "../src/traits/validateTraitValue.ts"

const valueTypes = new Map(builtinValueTypes.map((type) => [type.name, type]))
const vocabulary = { valueTypes, behaviours: new Set<string>() }
const validateTraitValue = (typing: Parameters<typeof validate>[1], value: unknown) =>
  validate(valueTypes, typing, value)

describe("validateTraitValue", () => {
  it.effect("checks declared types from the default schema", () =>
    Effect.gen(function* () {
      const schema = yield* TraitSchema.make(defaultTraitSchema, vocabulary)
      const declared = (key: string) => ({
        _tag: "Declared" as const,
        definition: Option.getOrThrow(schema.lookup(key))
      })
      expect(validateTraitValue(declared("expertise_level"), "expert")).toEqual(
        Result.succeed({ value: "expert", valueType: "enum" })
      )
      expect(Result.isFailure(validateTraitValue(declared("expertise_level"), "Expert"))).toBe(true)
      expect(validateTraitValue(declared("current_goals"), [" ship v1 "])).toEqual(
        Result.succeed({ value: ["ship v1"], valueType: "array" })
      )
      expect(Result.isFailure(validateTraitValue(declared("current_goals"), Array(101).fill("x")))).toBe(true)
    })
  )

  it("infers the type of an undeclared key and holds later values to it", () => {
    expect(validateTraitValue({ _tag: "New" }, 3.5)).toEqual(Result.succeed({ value: 3.5, valueType: "number" }))
    expect(validateTraitValue({ _tag: "New" }, null)).toEqual(
      Result.fail("null is not a trait value (delete the trait instead)")
    )
    expect(validateTraitValue({ _tag: "Established", valueType: "number" }, "3")).toEqual(
      Result.fail("expected a finite number, got a string")
    )
    expect(Result.isSuccess(validateTraitValue({ _tag: "Established", valueType: "array" }, [1, "a", { b: 2 }]))).toBe(
      true
    )
  })
})

describe("trait schema files", () => {
  it("turns `enum` with type string into an enum trait and rejects contradictions", () => {
    const ok = toDefinitions({ plan: { type: "string", enum: ["a", "b"] } })
    expect(Result.map(ok, (defs) => defs.map((d) => [d.valueType, d.enumValues, d.category]))).toEqual(
      Result.succeed([["enum", ["a", "b"], "custom"]])
    )
    expect(Result.isFailure(toDefinitions({ plan: { type: "number", enum: ["a"] } }))).toBe(true)
    expect(Result.isFailure(toDefinitions({ plan: { type: "enum" } }))).toBe(true)
    expect(Result.isFailure(toDefinitions({ plan: { type: "string", items: { type: "string" } } }))).toBe(true)
  })

  it("declares every trait the built-in schema documents", () => {
    expect(Object.keys(defaultTraitSchema).sort()).toEqual([
      "communication_style",
      "current_goals",
      "detail_preference",
      "expertise_level",
      "interests",
      "name",
      "nps_category",
      "preferred_language",
      "risk_level",
      "segment",
      "timezone"
    ])
  })
})

describe("search patterns", () => {
  it("escapes LIKE wildcards and the escape character", () => {
    expect(escapeLikePattern("50%_off\\")).toBe("50\\%\\_off\\\\")
  })
})

describe("ServiceAuth", () => {
  const auth = ServiceAuth.make({ app: [Redacted.make("s3cret")], admin: [] })
  const code = (header: string | undefined) =>
    Effect.runSync(
      auth.authorize("app", header).pipe(
        Effect.as("ok"),
        Effect.catchTag("AuthFailure", (failure) => Effect.succeed(failure.code))
      )
    )

  it("tells a missing key from a wrong one", () => {
    expect(code(undefined)).toBe("missing_api_key")
    expect(code("   ")).toBe("missing_api_key")
    expect(code("Bearer nope")).toBe("invalid_api_key")
    expect(code("Bearer s3cret extra")).toBe("invalid_api_key")
    expect(code("  bEaReR   s3cret ")).toBe("ok")
  })

  it("lets everything through when no key is configured", () => {
    const open = ServiceAuth.make({ app: [], admin: [] })
    expect(open.requiresKey("app") || open.requiresKey("admin")).toBe(false)
    expect(Exit.isSuccess(Effect.runSyncExit(open.authorize("admin", undefined)))).toBe(true)
  })
})
