import { Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { UsageGrouping, type UsageRow } from "../../usage/UsageReport.ts"
import { CliFailure } from "../CliFailure.ts"
import { optionalField } from "../optionalField.ts"
import { gatewayApi, print } from "../root.ts"
import { renderTable } from "../table.ts"

/** A group's name as the table shows it: `null` is the environment's keys (by key) or no user id (by user). */
const groupName = (row: UsageRow) => row.group ?? "—"

const count = (value: number) => String(value)

export const usage = Command.make(
  "usage",
  {
    groupBy: Flag.Literals("group-by", UsageGrouping.literals).pipe(
      Flag.withDescription("One row per key, user, model, namespace, day or work (default: day)"),
      Flag.withDefault("day")
    ),
    from: Flag.String("from").pipe(
      Flag.withDescription("The first day, YYYY-MM-DD (UTC; default: 29 days before --to)"),
      Flag.optional
    ),
    to: Flag.String("to").pipe(Flag.withDescription("The last day, YYYY-MM-DD (UTC; default: today)"), Flag.optional),
    user: Flag.String("user").pipe(Flag.withDescription("One user id's usage"), Flag.optional),
    key: Flag.String("key").pipe(
      Flag.withDescription("One key's usage (its id, as `keys list` shows it)"),
      Flag.optional
    ),
    profile: Flag.String("profile").pipe(
      Flag.withDescription("One profile's usage (its user id or UUID; not with --user or --key)"),
      Flag.optional
    )
  },
  Effect.fn("cli.usage")(function* ({ from, groupBy, key, profile, to, user }) {
    if (Option.isSome(profile) && (Option.isSome(user) || Option.isSome(key)))
      return yield* new CliFailure({ message: "--profile names one user already: not with --user or --key" })
    const api = yield* gatewayApi
    const query = { groupBy, ...optionalField("from", from), ...optionalField("to", to) }
    const report = Option.isSome(profile)
      ? yield* api.profiles.usage({ params: { id: profile.value }, query })
      : yield* api.usage.report({
          query: { ...query, ...optionalField("userId", user), ...optionalField("keyId", key) }
        })
    yield* print(report, ({ period, usage }) =>
      [
        `${period.from} to ${period.to} (UTC), by ${groupBy}`,
        renderTable<UsageRow>(
          [
            { header: groupBy.toUpperCase(), cell: groupName },
            { header: "REQUESTS", cell: (r) => count(r.requests), align: "right" },
            { header: "INPUT", cell: (r) => count(r.inputTokens), align: "right" },
            { header: "CACHED", cell: (r) => count(r.cachedInputTokens), align: "right" },
            { header: "OUTPUT", cell: (r) => count(r.outputTokens), align: "right" },
            { header: "INJECTED", cell: (r) => count(r.injectedTokens), align: "right" },
            { header: "MEMORY WORK", cell: (r) => count(r.memoryWorkTokens), align: "right" },
            // "—": a model in the group has no price in MODEL_PRICES.
            { header: "COST", cell: (r) => (r.cost === null ? "—" : r.cost.toFixed(4)), align: "right" }
          ],
          usage,
          "No usage in this period."
        )
      ].join("\n")
    )
  })
).pipe(
  Command.withDescription(
    "Tokens the providers reported for the apps' requests and the gateway's memory work, and their cost"
  )
)
