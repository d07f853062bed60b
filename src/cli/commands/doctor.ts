import { Effect } from "effect"
import { Command } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import { appConfigFromEnv } from "../../app/AppConfig.ts"
import { CliFailure } from "../CliFailure.ts"
import {
  type Check,
  database,
  embeddings,
  extractionModel,
  routes,
  runningGateway,
  upstream
} from "../doctor/checks.ts"
import { print, root } from "../root.ts"
import { renderTable } from "../table.ts"

const marks = { ok: "ok", warn: "warn", fail: "FAIL" } as const

/**
 * Checks what a `start` in this environment would depend on: the configuration, the database, the
 * provider, the routes file (`ROUTES_FILE`: each target's key and endpoint), the extraction and embedding
 * models, and a gateway already running at `--url`. Exits 1 when a check fails.
 */
export const doctor = Command.make("doctor", {}, () =>
  Effect.gen(function* () {
    const flags = yield* root
    const config = yield* Effect.result(appConfigFromEnv)
    // First: whether a gateway already runs here decides what a held embedded database means.
    const gateway = yield* runningGateway(flags.url)
    const checks: Array<Check> =
      config._tag === "Failure"
        ? [{ name: "configuration", status: "fail", detail: config.failure.message }]
        : [
            { name: "configuration", status: "ok", detail: "every variable is valid" },
            ...(yield* Effect.all(
              [
                database(config.success, gateway),
                upstream(config.success),
                routes(config.success),
                extractionModel(config.success),
                embeddings(config.success)
              ],
              { concurrency: "unbounded" }
            )).flat()
          ]
    checks.push(gateway)
    yield* print(checks, (found) =>
      renderTable(
        [
          { header: "CHECK", cell: (c: Check) => c.name },
          { header: "STATUS", cell: (c: Check) => marks[c.status] },
          { header: "DETAIL", cell: (c: Check) => c.detail, maxWidth: 200 }
        ],
        found
      )
    )
    const failed = checks.filter((c) => c.status === "fail").map((c) => c.name)
    if (failed.length > 0) return yield* new CliFailure({ message: `failed: ${failed.join(", ")}` })
  }).pipe(Effect.provide(FetchHttpClient.layer))
).pipe(
  Command.withDescription(
    "Check the configuration, the database, the provider, the routes file, the models and a running gateway; exits 1 if one fails"
  )
)
