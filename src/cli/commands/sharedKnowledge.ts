import { DateTime, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { MemoryType } from "../../domain/Memory.ts"
import { MAX_IMPORT } from "../../memories/MemoriesApi.ts"
import { readJsonFile } from "../CliFailure.ts"
import { optionalField } from "../optionalField.ts"
import { gatewayApi, print } from "../root.ts"
import { renderTable } from "../table.ts"
import { ImportFile } from "./memories.ts"

/** `pmg namespaces knowledge …`: what an app knows for all its users (`/api/namespaces/{name}/memories`). */

const name = Argument.String("namespace").pipe(Argument.withDescription("The namespace's name"))

const list = Command.make(
  "list",
  {
    name,
    limit: Flag.Int("limit").pipe(Flag.withDescription("At most this many (≤ 100)"), Flag.withDefault(20)),
    offset: Flag.Int("offset").pipe(Flag.withDefault(0))
  },
  Effect.fn("cli.knowledge.list")(function* ({ limit, name, offset }) {
    const api = yield* gatewayApi
    const page = yield* api.sharedMemories.list({ params: { name }, query: { limit, offset } })
    yield* print(page, ({ memories, total }) =>
      [
        renderTable(
          [
            { header: "ID", cell: (m) => m.id },
            { header: "TYPE", cell: (m) => m.type },
            { header: "CATEGORY", cell: (m) => m.category ?? "" },
            { header: "CONTENT", cell: (m) => m.content, maxWidth: 80 }
          ],
          memories,
          "No shared memories."
        ),
        `${memories.length} of ${total}`
      ].join("\n")
    )
  })
).pipe(Command.withDescription("List the memories a namespace shares with all its users"))

const add = Command.make(
  "add",
  {
    name,
    content: Argument.String("content").pipe(Argument.withDescription("What every user's assistant should know")),
    type: Flag.Literals("type", MemoryType.literals).pipe(Flag.withDefault("fact")),
    category: Flag.String("category").pipe(
      Flag.withDescription("One of the namespace's memory categories"),
      Flag.optional
    )
  },
  Effect.fn("cli.knowledge.add")(function* ({ category, content, name, type }) {
    const api = yield* gatewayApi
    const written = yield* api.sharedMemories.create({
      params: { name },
      payload: { content, type, ...optionalField("category", category) }
    })
    yield* print(
      written,
      ({ memory }) => `${memory.id} (${memory.type}, ${DateTime.formatIso(memory.createdAt)}): ${memory.content}`
    )
  })
).pipe(Command.withDescription("Add a memory every user of the namespace may be answered with"))

const remove = Command.make(
  "remove",
  { name, id: Argument.String("id").pipe(Argument.withDescription("The memory's id")) },
  Effect.fn("cli.knowledge.remove")(function* ({ id, name }) {
    const api = yield* gatewayApi
    yield* api.sharedMemories.remove({ params: { name, memoryId: id } })
    yield* print({ removed: id }, () => `removed ${id}`)
  })
).pipe(Command.withDescription("Delete a shared memory"))

const importKnowledge = Command.make(
  "import",
  {
    name,
    file: Argument.String("file").pipe(
      Argument.withDescription('A JSON array of memories ({"content", "type", …}), or {"memories": [...]}')
    )
  },
  Effect.fn("cli.knowledge.import")(function* ({ file, name }) {
    const content = yield* readJsonFile(file, ImportFile)
    const memories = "memories" in content ? content.memories : content
    const api = yield* gatewayApi
    let imported = 0
    let duplicates = 0
    for (let start = 0; start < memories.length; start += MAX_IMPORT) {
      const batch = yield* api.sharedMemories.import({
        params: { name },
        payload: { memories: memories.slice(start, start + MAX_IMPORT) }
      })
      imported += batch.memories.length
      duplicates += batch.duplicates
    }
    yield* print(
      { namespace: name, imported, duplicates },
      () =>
        `imported ${imported} shared memories into ${name}${duplicates > 0 ? ` (${duplicates} it had already)` : ""}`
    )
  })
).pipe(Command.withDescription("Import shared memories from a JSON file (each call of 1,000 all or none)"))

export const knowledge = Command.make("knowledge").pipe(
  Command.withDescription("What a namespace knows for all its users, injected where relevant"),
  Command.withSubcommands([list, add, remove, importKnowledge])
)
