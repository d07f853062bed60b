import { Effect, Option, Result, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { MemoryType } from "../../domain/Memory.ts"
import {
  type MemoryDays,
  type NamespaceSettings,
  NamespaceSettingsInput,
  RetentionPolicy
} from "../../domain/NamespaceSettings.ts"
import { CliFailure, readJsonFile } from "../CliFailure.ts"
import { optionalField } from "../optionalField.ts"
import { gatewayApi, print } from "../root.ts"
import { renderTable } from "../table.ts"
import { knowledge } from "./sharedKnowledge.ts"

const name = Argument.String("namespace").pipe(Argument.withDescription("The namespace's name"))

const list = Command.make(
  "list",
  {},
  Effect.fn("cli.namespaces.list")(function* () {
    const api = yield* gatewayApi
    const found = yield* api.namespaces.list()
    yield* print(found, ({ namespaces }) =>
      renderTable(
        [
          { header: "NAME", cell: (n) => n.name },
          { header: "PROFILES", cell: (n) => String(n.profiles), align: "right" },
          { header: "KEYS", cell: (n) => String(n.keys), align: "right" }
        ],
        namespaces,
        "No namespaces."
      )
    )
  })
).pipe(Command.withDescription("List the namespaces (apps) with their profiles and keys"))

const describeDays = (days: MemoryDays | undefined) =>
  Object.entries(days ?? {})
    .map(([type, n]) => `${type} ${n} d`)
    .join(", ") || "kept"

/** The settings as a reader wants them: what each field means for the namespace's users. */
const describeSettings = (settings: NamespaceSettings) =>
  [
    `namespace ${settings.namespace}${settings.updatedAt === null ? " (defaults)" : ` (updated ${settings.updatedAt})`}`,
    `extraction instructions: ${settings.extractionInstructions === "" ? "none" : settings.extractionInstructions}`,
    `memory categories: ${
      settings.memoryCategories.length === 0
        ? "none"
        : settings.memoryCategories.map((category) => `${category.name} (${category.description})`).join("; ")
    }`,
    `trait schema: ${settings.traitSchema === null ? "the gateway's" : Object.keys(settings.traitSchema).join(", ")}`,
    `retention: turns ${settings.retention.turnsDays === undefined ? "kept" : `${settings.retention.turnsDays} d`}; ` +
      `memories ${describeDays(settings.retention.memoryDays)}`,
    `last sweep: ${
      settings.lastSweep === null
        ? "nothing removed yet"
        : `${settings.lastSweep.at}: ${settings.lastSweep.memories} memories, ${settings.lastSweep.turns} turns, ` +
          `${settings.lastSweep.responses} responses`
    }`
  ].join("\n")

const show = Command.make(
  "settings",
  { name },
  Effect.fn("cli.namespaces.settings")(function* ({ name }) {
    const api = yield* gatewayApi
    yield* print(yield* api.namespaces.settings({ params: { name } }), describeSettings)
  })
).pipe(Command.withDescription("Show a namespace's extraction settings and retention"))

const MemoryDaysFlag = Schema.decodeUnknownResult(Schema.Tuple([MemoryType, Schema.NumberFromString]))

/** `fact=30` → ["fact", 30], or why not. */
const parseMemoryDays = (pairs: ReadonlyArray<string>) => {
  const days: Record<string, number> = {}
  for (const pair of pairs) {
    const parsed = MemoryDaysFlag(pair.split("="))
    if (Result.isFailure(parsed))
      return Result.fail(`--memory-days ${pair}: expected TYPE=DAYS with TYPE one of ${MemoryType.literals.join(", ")}`)
    days[parsed.success[0]] = parsed.success[1]
  }
  return Result.succeed(days)
}

const configure = Command.make(
  "configure",
  {
    name,
    file: Flag.String("file").pipe(
      Flag.withDescription("A JSON file of settings, as PUT /api/namespaces/{name}/settings takes them"),
      Flag.optional
    ),
    instructions: Flag.String("instructions").pipe(
      Flag.withDescription("Text added to the extraction model's instructions for this namespace"),
      Flag.optional
    ),
    turnsDays: Flag.Int("turns-days").pipe(Flag.withDescription("Days recorded turns are kept"), Flag.optional),
    memoryDays: Flag.String("memory-days").pipe(
      Flag.withDescription("TYPE=DAYS: how long memories of a type live (repeat for several)"),
      Flag.atLeast(0)
    ),
    replace: Flag.Boolean("replace").pipe(
      Flag.withDescription(
        "Replace every setting (those not given go back to their defaults) instead of changing some"
      ),
      Flag.withDefault(false)
    )
  },
  Effect.fn("cli.namespaces.configure")(function* ({ file, instructions, memoryDays, name, replace, turnsDays }) {
    const fromFile = Option.isSome(file) ? yield* readJsonFile(file.value, NamespaceSettingsInput) : {}
    const days = parseMemoryDays(memoryDays)
    if (Result.isFailure(days)) return yield* new CliFailure({ message: days.failure })
    const api = yield* gatewayApi
    const flagsRetention = Option.isSome(turnsDays) || memoryDays.length > 0
    // The flags change one part of the retention; the API replaces it whole: the rest is kept as it is now
    // (with --replace, as the file has it).
    const kept = flagsRetention && !replace ? (yield* api.namespaces.settings({ params: { name } })).retention : {}
    const retention = flagsRetention
      ? yield* Schema.decodeUnknownEffect(RetentionPolicy)({
          ...kept,
          ...fromFile.retention,
          ...optionalField("turnsDays", turnsDays),
          memoryDays: { ...kept.memoryDays, ...fromFile.retention?.memoryDays, ...days.success }
        }).pipe(Effect.mapError((error) => new CliFailure({ message: `retention: ${error.message}` })))
      : fromFile.retention
    const payload = {
      ...fromFile,
      ...optionalField("extractionInstructions", instructions),
      ...(retention === undefined ? {} : { retention })
    }
    if (!replace && Object.keys(payload).length === 0)
      return yield* new CliFailure({
        message: "nothing to change: give --file, --instructions, --turns-days or --memory-days"
      })
    const written = replace
      ? yield* api.namespaces.putSettings({ params: { name }, payload })
      : yield* api.namespaces.patchSettings({ params: { name }, payload })
    yield* print(written, describeSettings)
  })
).pipe(Command.withDescription("Change a namespace's extraction settings and retention"))

export const namespaces = Command.make("namespaces").pipe(
  Command.withDescription("The apps sharing the gateway: their settings, retention and shared knowledge"),
  Command.withSubcommands([list, show, configure, knowledge])
)
