import { Console, Effect, FileSystem, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { GatewayApiClient } from "../../client/GatewayClient.ts"
import type { ListedProfile } from "../../domain/Profile.ts"
import { TraitSource } from "../../domain/Trait.ts"
import { MAX_IMPORT } from "../../memories/MemoriesApi.ts"
import { ProfileCreated } from "../../profileApi/ProfilesApi.ts"
import { CliFailure, readJsonFile } from "../CliFailure.ts"
import { optionalField } from "../optionalField.ts"
import { gatewayApi, print } from "../root.ts"
import { renderFields, renderTable, renderTime } from "../table.ts"

const user = Argument.String("user").pipe(Argument.withDescription("The user id (or the profile's UUID)"))

const list = Command.make(
  "list",
  {
    search: Flag.String("search").pipe(Flag.withDescription("Only user ids containing this text"), Flag.optional),
    limit: Flag.Int("limit").pipe(Flag.withDescription("At most this many (≤ 100)"), Flag.withDefault(50)),
    offset: Flag.Int("offset").pipe(Flag.withDefault(0))
  },
  Effect.fn("cli.profiles.list")(function* ({ limit, offset, search }) {
    const api = yield* gatewayApi
    const page = yield* api.profiles.list({
      query: { limit, offset, ...optionalField("search", search) }
    })
    yield* print(page, ({ profiles, total }) =>
      [
        renderTable<ListedProfile>(
          [
            { header: "USER", cell: (p) => p.externalId },
            { header: "NAMESPACE", cell: (p) => p.namespace },
            { header: "TRAITS", cell: (p) => String(p.counts.traits), align: "right" },
            { header: "MEMORIES", cell: (p) => String(p.counts.memories), align: "right" },
            { header: "MESSAGES", cell: (p) => String(p.counts.messages), align: "right" },
            { header: "LAST ACTIVE", cell: (p) => renderTime(p.lastActivityAt) }
          ],
          profiles,
          "No profiles."
        ),
        `${offset + profiles.length} of ${total}`
      ].join("\n")
    )
  })
).pipe(Command.withDescription("List profiles, newest first"))

const show = Command.make(
  "show",
  { user },
  Effect.fn("cli.profiles.show")(function* ({ user }) {
    const api = yield* gatewayApi
    const found = yield* api.profiles.get({ params: { id: user } })
    yield* print(found, ({ profile, recentMemories }) =>
      [
        renderFields([
          ["user", profile.externalId],
          ["id", profile.id],
          ["namespace", profile.namespace],
          ["created", renderTime(profile.createdAt)],
          ["summary", profile.summary ?? "(none yet)"]
        ]),
        "",
        "Traits",
        renderTable(
          [
            { header: "KEY", cell: (t) => t.key },
            { header: "VALUE", cell: (t) => JSON.stringify(t.value) },
            { header: "CONFIDENCE", cell: (t) => t.confidence.toFixed(2), align: "right" },
            { header: "SOURCE", cell: (t) => t.source }
          ],
          profile.traits
        ),
        "",
        "Recent memories",
        renderTable(
          [
            { header: "TYPE", cell: (m) => m.type },
            { header: "CONTENT", cell: (m) => m.content, maxWidth: 80 },
            { header: "CREATED", cell: (m) => renderTime(m.createdAt) }
          ],
          recentMemories
        )
      ].join("\n")
    )
  })
).pipe(Command.withDescription("A profile: summary, traits and recent memories"))

const exportProfile = Command.make(
  "export",
  {
    user,
    output: Flag.String("output").pipe(
      Flag.withAlias("o"),
      Flag.withDescription("Write to this file instead of standard output"),
      Flag.optional
    )
  },
  Effect.fn("cli.profiles.export")(function* ({ output, user }) {
    const api = yield* gatewayApi
    const exported = yield* api.profiles.export({ params: { id: user } })
    const text = JSON.stringify(exported, null, 2)
    if (Option.isNone(output)) return yield* Console.log(text)
    const fs = yield* FileSystem.FileSystem
    const cannotWrite = (error: { readonly message: string }) =>
      new CliFailure({ message: `cannot write ${output.value}: ${error.message}` })
    // Everything about a person: readable by its owner only. A file already there is closed to others
    // before the data goes in (the mode below only applies to a file the write creates).
    const existing = yield* Effect.option(fs.stat(output.value))
    if (Option.isSome(existing) && existing.value.type === "File" && (existing.value.mode & 0o777) !== 0o600)
      yield* fs.chmod(output.value, 0o600).pipe(Effect.mapError(cannotWrite))
    yield* fs.writeFileString(output.value, `${text}\n`, { mode: 0o600 }).pipe(Effect.mapError(cannotWrite))
    yield* Console.error(`exported ${exported.profile.externalId} to ${output.value}`)
  })
).pipe(Command.withDescription("Everything the gateway holds about a user, as JSON (the GDPR export)"))

const erase = Command.make(
  "erase",
  {
    user,
    yes: Flag.Boolean("yes").pipe(
      Flag.withAlias("y"),
      Flag.withDescription("Confirm: the profile cannot be restored"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("cli.profiles.erase")(function* ({ user, yes }) {
    if (!yes) return yield* new CliFailure({ message: `erasing ${user} deletes everything about them: add --yes` })
    const api = yield* gatewayApi
    const removed = yield* api.profiles.remove({ params: { id: user } })
    yield* print(
      removed,
      ({ deleted, profile }) =>
        `erased ${profile.externalId}: ${deleted.traits} traits, ${deleted.memories} memories, ${deleted.messages} messages`
    )
  })
).pipe(Command.withDescription("Delete a profile and everything attached to it"))

/** The parts of an export (`profiles export`) an import restores. */
const ExportFile = Schema.Struct({
  profile: Schema.Struct({ externalId: Schema.String, summary: Schema.NullOr(Schema.String) }),
  traits: Schema.Array(
    Schema.Struct({
      key: Schema.String,
      value: Schema.Json,
      confidence: Schema.Finite,
      // An extracted trait stays one: extraction goes on updating it (older exports have no source: manual).
      source: Schema.optionalKey(TraitSource)
    })
  ),
  memories: Schema.Array(
    Schema.Struct({
      content: Schema.String,
      type: Schema.Literals(["fact", "preference", "event", "context"]),
      importance: Schema.Finite,
      cues: Schema.Array(Schema.String),
      occurredAt: Schema.NullOr(Schema.String),
      supersededBy: Schema.NullOr(Schema.String),
      tags: Schema.Array(Schema.String),
      metadata: Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Finite, Schema.Boolean])),
      createdAt: Schema.String
    })
  )
})

type ExportFile = typeof ExportFile.Type

/** Replaced memories are history: only the current ones are brought over. */
const currentMemories = (exported: ExportFile) => exported.memories.filter((memory) => memory.supersededBy === null)

/** Writes an export's summary, traits and current memories into the (new) profile `id`. */
const restore = (api: GatewayApiClient, id: string, exported: ExportFile) =>
  Effect.gen(function* () {
    if (exported.profile.summary !== null)
      yield* api.profiles.update({ params: { id }, payload: { summary: exported.profile.summary } })
    for (const trait of exported.traits)
      yield* api.traits.put({
        params: { id, key: trait.key },
        payload: {
          value: trait.value,
          confidence: trait.confidence,
          ...(trait.source === undefined ? {} : { source: trait.source })
        }
      })
    const current = currentMemories(exported)
    for (let start = 0; start < current.length; start += MAX_IMPORT)
      yield* api.memories.import({
        params: { id },
        payload: {
          memories: current.slice(start, start + MAX_IMPORT).map((memory) => ({
            content: memory.content,
            type: memory.type,
            importance: memory.importance,
            cues: memory.cues,
            tags: memory.tags,
            metadata: memory.metadata,
            createdAt: memory.createdAt,
            ...(memory.occurredAt === null ? {} : { occurredAt: memory.occurredAt })
          }))
        }
      })
  })

const importProfile = Command.make(
  "import",
  {
    file: Argument.String("file").pipe(Argument.withDescription("A file written by `profiles export`")),
    as: Flag.String("as").pipe(Flag.withDescription("Import under this user id instead of the file's"), Flag.optional)
  },
  Effect.fn("cli.profiles.import")(function* ({ as, file }) {
    const exported = yield* readJsonFile(file, ExportFile)
    const externalId = Option.getOrElse(as, () => exported.profile.externalId)
    const api = yield* gatewayApi
    const created = yield* api.profiles.create({ payload: { externalId } })
    if (!(created instanceof ProfileCreated))
      return yield* new CliFailure({
        message: `${externalId} exists already: erase it first, or import under another id with --as`
      })
    // By internal id from here on: a user id that looks like a UUID is never read as one.
    const id = created.profile.id
    yield* restore(api, id, exported).pipe(
      // All or nothing: a profile left half restored would refuse the next try ("exists already").
      Effect.tapError(() =>
        api.profiles
          .remove({ params: { id } })
          .pipe(Effect.andThen(Console.error(`the import failed: ${externalId} was removed again`)), Effect.ignore)
      )
    )
    const imported = {
      externalId,
      summary: exported.profile.summary !== null,
      traits: exported.traits.length,
      memories: currentMemories(exported).length
    }
    yield* print(
      imported,
      (counts) =>
        `imported ${counts.externalId}: ${counts.summary ? "summary, " : ""}${counts.traits} traits, ${counts.memories} memories`
    )
  })
).pipe(
  Command.withDescription(
    "Restore a profile from an export: its summary, traits and current memories (recorded messages are not replayed)"
  )
)

export const profiles = Command.make("profiles").pipe(
  Command.withDescription("List, read, export, erase and import profiles"),
  Command.withSubcommands([list, show, exportProfile, erase, importProfile])
)
