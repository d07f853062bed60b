import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BudgetLimit, BudgetState } from "../budgets/Budget.ts"
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
    }).annotateMerge(OpenApi.annotations({ summary: "Remove each user's budget" }))
  )
  .prefix("/api/namespaces")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "The apps sharing the gateway, each its own space of users" })) {}
