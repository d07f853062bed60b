import { Config, Console, Effect, Option, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import { GatewayClient } from "../client/GatewayClient.ts"
import { CliFailure } from "./CliFailure.ts"

/** The first of a comma-separated list of keys (`ADMIN_API_KEY` may hold several while one is rotated). */
const firstKey = (name: string) =>
  Config.Redacted(name).pipe(Config.map((keys) => Redacted.make(Redacted.value(keys).split(",")[0]?.trim() ?? "")))

/**
 * The root command. Its flags reach every subcommand: where the gateway is and who calls it (flags,
 * else the environment: the same shell that runs the gateway can manage it), and the output format.
 */
export const root = Command.make("profile-memory-gateway").pipe(
  Command.withSharedFlags({
    url: Flag.String("url").pipe(
      Flag.withDescription("The running gateway's root URL (GATEWAY_URL; default http://localhost:$PORT, PORT 3100)"),
      Flag.withFallbackConfig(
        Config.String("GATEWAY_URL").pipe(
          // Read as text: a bad PORT is for `start` to report, not a reason for every command to fail.
          Config.orElse(() => Config.String("PORT").pipe(Config.map((port) => `http://localhost:${port}`))),
          Config.withDefault("http://localhost:3100")
        )
      )
    ),
    adminKey: Flag.Redacted("admin-key").pipe(
      Flag.withDescription("An admin key (GATEWAY_ADMIN_KEY, else the first of ADMIN_API_KEY)"),
      Flag.withFallbackConfig(firstKey("GATEWAY_ADMIN_KEY").pipe(Config.orElse(() => firstKey("ADMIN_API_KEY")))),
      Flag.optional
    ),
    namespace: Flag.String("namespace").pipe(
      Flag.withAlias("n"),
      Flag.withDescription("The namespace to act in (GATEWAY_NAMESPACE); the env admin key without it sees all"),
      Flag.withFallbackConfig(Config.String("GATEWAY_NAMESPACE")),
      Flag.optional
    ),
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print JSON (for scripts) instead of tables"),
      Flag.withDefault(false)
    )
  }),
  Command.withDescription("Run and manage a profile-memory gateway")
)

/** The management API of the gateway the flags name. */
export const gatewayApi = Effect.gen(function* () {
  const flags = yield* root
  const url = URL.canParse(flags.url) ? new URL(flags.url) : undefined
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:"))
    return yield* new CliFailure({ message: `--url must be the gateway's http(s) URL, e.g. http://localhost:3100` })
  return yield* GatewayClient.make({
    url: flags.url,
    apiKey: Option.getOrUndefined(flags.adminKey),
    namespace: Option.getOrUndefined(flags.namespace)
  })
}).pipe(Effect.provide(FetchHttpClient.layer))

/** Prints a result: as JSON with `--json`, otherwise as `human` renders it. */
export const print = <A>(value: A, human: (value: A) => string) =>
  Effect.flatMap(root, (flags) => Console.log(flags.json ? JSON.stringify(value, null, 2) : human(value)))
