import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { BudgetState } from "../../budgets/Budget.ts"
import type { ListedKey } from "../../keys/KeysApi.ts"
import { optionalField } from "../optionalField.ts"
import { gatewayApi, print } from "../root.ts"
import { renderTable, renderTime } from "../table.ts"

const PER = { day: "today", month: "this month" } as const

/** Spent of the limit this period, in tokens or in cost as the budget is given ("—": no budget). */
const renderBudget = (budget: BudgetState | null) =>
  budget === null
    ? "—"
    : budget.cost === undefined
      ? `${budget.spent} of ${budget.tokens ?? 0} tokens ${PER[budget.period]}`
      : `${budget.spent.toFixed(4)} of ${budget.cost.toFixed(4)} ${PER[budget.period]}`

/** What the key used this period (its budget's, else the month), and its cost when every model has a price. */
const renderUsage = ({ usage }: typeof ListedKey.Type) =>
  `${usage.requests} requests, ${usage.tokens} tokens${usage.cost === null ? "" : `, ${usage.cost.toFixed(4)}`} ${PER[usage.period]}`

const keyId = Argument.String("id").pipe(Argument.withDescription("The key's id (as `keys list` shows it)"))

const list = Command.make(
  "list",
  {},
  Effect.fn("cli.keys.list")(function* () {
    const api = yield* gatewayApi
    const listed = yield* api.keys.list()
    yield* print(listed, ({ keys }) =>
      renderTable<typeof ListedKey.Type>(
        [
          { header: "ID", cell: (k) => k.id },
          { header: "PREFIX", cell: (k) => k.prefix },
          { header: "NAMESPACE", cell: (k) => k.namespace },
          { header: "SCOPE", cell: (k) => k.scope },
          { header: "LABEL", cell: (k) => k.label ?? "" },
          // "—": only the gateway's limits.
          { header: "RATE LIMIT", cell: (k) => (k.rateLimitPerMinute === null ? "—" : `${k.rateLimitPerMinute}/min`) },
          // "—": the gateway's provider key; else the provider of the key's own.
          { header: "PROVIDER", cell: (k) => k.upstreamProvider ?? "—" },
          { header: "BUDGET", cell: (k) => renderBudget(k.budget) },
          { header: "USAGE", cell: renderUsage },
          { header: "LAST USED", cell: (k) => renderTime(k.usage.lastUsedAt) },
          { header: "CREATED", cell: (k) => renderTime(k.createdAt) },
          { header: "EXPIRES", cell: (k) => renderTime(k.expiresAt) },
          { header: "REVOKED", cell: (k) => renderTime(k.revokedAt) },
          // "—": made by the environment's admin key, the root of every tree of keys.
          { header: "CREATED BY", cell: (k) => k.createdBy ?? "—" }
        ],
        keys,
        "No keys."
      )
    )
  })
).pipe(Command.withDescription("Keys held in the database (never their secrets)"))

const create = Command.make(
  "create",
  {
    scope: Flag.Literals("scope", ["app", "admin"]).pipe(
      Flag.withDescription("app: /v1 and /mcp; admin: the management API"),
      Flag.withDefault("app")
    ),
    keyNamespace: Flag.String("for-namespace").pipe(
      Flag.withDescription("The key's namespace (default: the caller's)"),
      Flag.optional
    ),
    label: Flag.String("label").pipe(Flag.optional),
    rateLimit: Flag.Int("rate-limit").pipe(Flag.withDescription("Requests a minute"), Flag.optional),
    expiresAt: Flag.String("expires-at").pipe(Flag.withDescription("ISO 8601 time"), Flag.optional)
  },
  Effect.fn("cli.keys.create")(function* ({ expiresAt, keyNamespace, label, rateLimit, scope }) {
    const api = yield* gatewayApi
    const created = yield* api.keys.create({
      payload: {
        scope,
        ...optionalField("namespace", keyNamespace),
        ...optionalField("label", label),
        ...optionalField("rateLimitPerMinute", rateLimit),
        ...optionalField("expiresAt", expiresAt)
      }
    })
    yield* print(
      created,
      (k) => `created ${k.scope} key ${k.id} in ${k.namespace}\n${k.key}\n(the secret is shown this once: store it now)`
    )
  })
).pipe(Command.withDescription("Create a key; its secret is printed once"))

const rotate = Command.make(
  "rotate",
  {
    id: keyId,
    grace: Flag.Int("grace-seconds").pipe(
      Flag.withDescription("How long the old secret keeps working (default 1 h)"),
      Flag.optional
    )
  },
  Effect.fn("cli.keys.rotate")(function* ({ grace, id }) {
    const api = yield* gatewayApi
    const rotated = yield* api.keys.rotate({
      params: { id },
      payload: optionalField("graceSeconds", grace)
    })
    yield* print(rotated, (k) => `rotated key ${k.id}\n${k.key}\n(the new secret is shown this once)`)
  })
).pipe(Command.withDescription("A new secret for a key; the old one works for the grace period"))

const revoke = Command.make(
  "revoke",
  { id: keyId },
  Effect.fn("cli.keys.revoke")(function* ({ id }) {
    const api = yield* gatewayApi
    const revoked = yield* api.keys.revoke({ params: { id } })
    yield* print(revoked, ({ key }) => `revoked key ${key.id} (${key.prefix}…)`)
  })
).pipe(Command.withDescription("Revoke a key at once, on every replica"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("Create, list, rotate and revoke keys"),
  Command.withSubcommands([list, create, rotate, revoke])
)
