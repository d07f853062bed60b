import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { TraitChange } from "../domain/History.ts"
import { isStorableJsonValue, StorableString } from "../domain/storableText.ts"
import { Confidence, Trait, TraitKey, TraitSource } from "../domain/Trait.ts"
import { TraitDefinition } from "../domain/TraitDefinition.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { ProfileRef, Success } from "../http/apiFields.ts"
import { BadRequest, NotFound } from "../http/OpenAiError.ts"

/** `/api/profiles/{id}/traits`: a profile's traits and their history. */
export class TraitsGroup extends HttpApiGroup.make("traits")
  .add(
    HttpApiEndpoint.get("list", "/:id/traits", {
      params: ProfileRef,
      success: Schema.Struct({ traits: Schema.Array(Trait) }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List traits" })),
    HttpApiEndpoint.put("put", "/:id/traits/:key", {
      params: { ...ProfileRef, key: TraitKey },
      payload: Schema.Struct({
        value: Schema.Json.check(isStorableJsonValue),
        confidence: Schema.optionalKey(Confidence),
        source: Schema.optionalKey(
          TraitSource.annotate({
            description:
              "`manual` (the default): extraction never changes it. `extracted` restores a learned trait " +
              "(an import from an export): extraction keeps updating it"
          })
        )
      }),
      success: Schema.Struct({ trait: Trait }),
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a trait",
        description:
          "Create or replace a trait by hand (source `manual`, confidence 1.0 unless given; `source: extracted` " +
          "restores a learned trait, which extraction keeps updating). " +
          "The value must match the trait's declared type; an undeclared key keeps the type of its first value."
      })
    ),
    HttpApiEndpoint.delete("remove", "/:id/traits/:key", {
      params: { ...ProfileRef, key: StorableString },
      success: Success,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a trait" })),
    HttpApiEndpoint.get("history", "/:id/traits/:key/history", {
      params: { ...ProfileRef, key: StorableString },
      success: Schema.Struct({ history: Schema.Array(TraitChange) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List a trait's changes",
        description: "Every change of the trait's value, newest first"
      })
    )
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "Typed facts about a user, set by hand or learned, with their history" })
  ) {}

/** `/api/trait-definitions`: the trait schema in force, so editors can offer a trait's allowed values. */
export class TraitDefinitionsGroup extends HttpApiGroup.make("traitDefinitions")
  .add(
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({ definitions: Schema.Array(TraitDefinition) })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List trait definitions",
        description:
          "The declared traits of the namespace the caller acts in (its own `traitSchema`, else the default schema or " +
          "TRAITS_FILE, and plugins): each key's value type, allowed " +
          "values of an enum, item type of an array, category, description, and whether it is extracted and injected"
      })
    )
  )
  .prefix("/api/trait-definitions")
  .middleware(ApiValidation) {}
