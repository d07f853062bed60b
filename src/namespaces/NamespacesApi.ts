import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BudgetLimit, BudgetState } from "../budgets/Budget.ts"
import { NamespaceSettings, NamespaceSettingsInput } from "../domain/NamespaceSettings.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { BadRequest, Forbidden } from "../http/OpenAiError.ts"

export const NamespaceSummary = Schema.Struct({
  name: Schema.String,
  /** Profiles in the namespace. */
  profiles: Schema.Int,
  /** Keys held in the database for the namespace, not revoked nor expired. */
  keys: Schema.Int,
  /** The namespace's budget, with what it spent this period; `null`: none. */
  budget: Schema.NullOr(BudgetState),
  /** Each user's budget (a user's spending: `GET /api/profiles/{id}/usage`); `null`: none. */
  userBudget: Schema.NullOr(BudgetLimit)
})

const NamespaceName = { name: Schema.String }

/** `/api/namespaces`: the namespaces the caller sees, with what each holds. */
export class NamespacesGroup extends HttpApiGroup.make("namespaces")
  .add(
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({ namespaces: Schema.Array(NamespaceSummary) })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List namespaces",
        description:
          "Every namespace with profiles or live keys, and `default`, by name (a namespace's admin key, or " +
          "`X-Service-Namespace`: that one only), with its counts of profiles and live keys and its budgets."
      })
    ),
    HttpApiEndpoint.put("setBudget", "/:name/budget", {
      params: NamespaceName,
      payload: BudgetLimit,
      success: Schema.Struct({ budget: BudgetState }),
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a namespace's budget",
        description:
          "Tokens (or cost) all of the namespace's traffic and memory work may spend per UTC `day` or `month`; once " +
          "spent, its requests answer 429 `budget_exceeded` until the next period. The global admin's only (403 " +
          "`budget_not_allowed` for a namespace's admin key)."
      })
    ),
    HttpApiEndpoint.delete("removeBudget", "/:name/budget", {
      params: NamespaceName,
      success: Schema.Struct({ removed: Schema.Boolean }),
      error: [BadRequest, Forbidden]
    }).annotateMerge(OpenApi.annotations({ summary: "Remove a namespace's budget" })),
    HttpApiEndpoint.put("setUserBudget", "/:name/user-budget", {
      params: NamespaceName,
      payload: BudgetLimit,
      success: Schema.Struct({ userBudget: BudgetLimit }),
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set each user's budget",
        description:
          "Tokens (or cost) each user of the namespace may spend per UTC `day` or `month` (their requests and the " +
          "memory work for them); a user past it gets 429 `budget_exceeded` until the next period. The global " +
          "admin's or the namespace's admin key's."
      })
    ),
    HttpApiEndpoint.delete("removeUserBudget", "/:name/user-budget", {
      params: NamespaceName,
      success: Schema.Struct({ removed: Schema.Boolean }),
      error: [BadRequest, Forbidden]
    }).annotateMerge(OpenApi.annotations({ summary: "Remove each user's budget" })),
    HttpApiEndpoint.get("settings", "/:name/settings", {
      params: NamespaceName,
      success: NamespaceSettings,
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Read a namespace's settings",
        description:
          "Its extraction instructions, memory categories, trait schema and retention, with what the latest " +
          "retention sweep removed; a namespace that set none answers the defaults (`updatedAt: null`)."
      })
    ),
    HttpApiEndpoint.put("putSettings", "/:name/settings", {
      params: NamespaceName,
      payload: NamespaceSettingsInput,
      success: NamespaceSettings,
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a namespace's settings",
        description:
          "Replaces them all (a field left out goes back to its default). `extractionInstructions`: text added to " +
          "the extraction model's instructions for this namespace's turns; `memoryCategories`: the categories its " +
          "memories are sorted into (`category`); `traitSchema`: a trait schema in `TRAITS_FILE`'s form that " +
          "replaces the gateway's for its users (`null`: the gateway's); `retention`: days turns are kept " +
          "(`turnsDays`) and memories of each type live (`memoryDays`). The next extraction jobs use them; a " +
          "retention change moves the expiry of the namespace's memories that have no expiry of their own."
      })
    ),
    HttpApiEndpoint.patch("patchSettings", "/:name/settings", {
      params: NamespaceName,
      payload: NamespaceSettingsInput,
      success: NamespaceSettings,
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Change some of a namespace's settings",
        description: "As `PUT`, for the fields given only; the others stay."
      })
    )
  )
  .prefix("/api/namespaces")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "The apps sharing the gateway, each its own space of users" })) {}
