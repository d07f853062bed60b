import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { appConfigFromEnv } from "../../app/AppConfig.ts"
import { CliFailure } from "../CliFailure.ts"
import { print, root } from "../root.ts"
import { renderTable } from "../table.ts"
import { type Check, database, embeddings, extractionModel, routes, runningGateway, upstream } from "./checks.ts"

const marks = { ok: "ok", warn: "warn", fail: "FAIL" } as const

/**
 * `doctor`'s work: loaded by the command when it runs, as its checks need the configuration's, the
 * database's and the embedding model's modules.
 */
export const runDoctor = Effect.gen(function* () {
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
