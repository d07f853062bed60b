import { Console, DateTime, Effect, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { MemoryType } from "../../domain/Memory.ts"
import { ImportedMemory, MAX_IMPORT } from "../../memories/MemoriesApi.ts"
import { readJsonFile } from "../CliFailure.ts"
import { optionalField } from "../optionalField.ts"
import { profileToWrite } from "../profileToWrite.ts"
import { gatewayApi, print } from "../root.ts"
import { renderTable } from "../table.ts"

const user = Argument.String("user").pipe(Argument.withDescription("The user id (or the profile's UUID)"))

const search = Command.make(
  "search",
  {
    user,
    query: Argument.String("query").pipe(Argument.withDescription("A message, as the user would write it")),
    limit: Flag.Int("limit").pipe(Flag.withDescription("At most this many (≤ 100)"), Flag.withDefault(10))
  },
  Effect.fn("cli.memories.search")(function* ({ limit, query, user }) {
    const api = yield* gatewayApi
    const found = yield* api.memories.search({ params: { id: user }, payload: { query, limit } })
    yield* print(found, ({ memories, retrieval }) =>
      [
        renderTable(
          [
            { header: "SCORE", cell: (m) => m.score.toFixed(3), align: "right" },
            { header: "RELEVANT", cell: (m) => (m.relevant ? "yes" : "no") },
            { header: "INJECTED", cell: (m) => (m.injected ? "yes" : "no") },
            { header: "TYPE", cell: (m) => m.type },
            { header: "CONTENT", cell: (m) => m.content, maxWidth: 80 }
          ],
          memories,
          "No memories."
        ),
        `ranking: ${retrieval.mode}, semantic part ${retrieval.semantic}` +
          (retrieval.unembedded === 0 ? "" : `, ${retrieval.unembedded} memories not embedded yet`)
      ].join("\n")
    )
  })
).pipe(Command.withDescription("Rank a user's memories for a message, as injection does"))

const add = Command.make(
  "add",
  {
    user,
    content: Argument.String("content").pipe(Argument.withDescription("What to remember")),
    type: Flag.Literals("type", MemoryType.literals).pipe(Flag.withDefault("fact")),
    importance: Flag.Finite("importance").pipe(Flag.withDescription("0 to 1"), Flag.optional),
    tags: Flag.String("tag").pipe(Flag.withDescription("A label (repeat for several)"), Flag.atLeast(0)),
    category: Flag.String("category").pipe(
      Flag.withDescription("One of the namespace's memory categories (pmg namespaces settings)"),
      Flag.optional
    )
  },
  Effect.fn("cli.memories.add")(function* ({ category, content, importance, tags, type, user }) {
    const api = yield* gatewayApi
    const id = yield* profileToWrite(api, user)
    const created = yield* api.memories.create({
      params: { id },
      payload: {
        content,
        type,
        ...(tags.length > 0 ? { tags } : {}),
        ...optionalField("importance", importance),
        ...optionalField("category", category)
      }
    })
    yield* print(
      created,
      ({ memory }) => `added memory ${memory.id} (${memory.type}, ${DateTime.formatIso(memory.createdAt)})`
    )
  })
).pipe(Command.withDescription("Add a memory to a user's profile (created if new)"))

/** An import file: a JSON array of memories, or `{ "memories": [...] }` as the API takes it. */
export const ImportFile = Schema.Union([
  Schema.Array(ImportedMemory),
  Schema.Struct({ memories: Schema.Array(ImportedMemory) })
])

const importMemories = Command.make(
  "import",
  {
    user,
    file: Argument.String("file").pipe(
      Argument.withDescription(
        'A JSON array of memories ({"content", "type", "importance"?, "tags"?, …}), or {"memories": [...]}'
      )
    )
  },
  Effect.fn("cli.memories.import")(function* ({ file, user }) {
    const content = yield* readJsonFile(file, ImportFile)
    const memories = "memories" in content ? content.memories : content
    const api = yield* gatewayApi
    const id = yield* profileToWrite(api, user)
    let imported = 0
    // Each call is all or none; a file larger than one call goes in several, and a failure says how far it got.
    for (let start = 0; start < memories.length; start += MAX_IMPORT) {
      const batch = yield* api.memories
        .import({ params: { id }, payload: { memories: memories.slice(start, start + MAX_IMPORT) } })
        .pipe(
          Effect.tapError(() =>
            imported === 0
              ? Effect.void
              : Console.error(`${imported} of ${memories.length} memories were imported before this failure`)
          )
        )
      imported += batch.memories.length
    }
    yield* print({ user, imported }, () => `imported ${imported} memories into ${user}`)
  })
).pipe(
  Command.withDescription(
    "Import memories from a JSON file (another memory store, a backup) into a profile (created if new)"
  )
)

export const memories = Command.make("memories").pipe(
  Command.withDescription("Search, add and import a user's memories"),
  Command.withSubcommands([search, add, importMemories])
)
