import { DateTime, Effect, Layer } from "effect"
import { McpProtocol, McpServer } from "effect/ai"
import type { ClientFacing } from "../domain/ClientError.ts"
import { type Memory, roundImportance } from "../domain/Memory.ts"
import type { Trait } from "../domain/Trait.ts"
import { ServerConfig } from "../http/ServerConfig.ts"
import { Memories } from "../memories/Memories.ts"
import { MemorySearch } from "../memories/MemorySearch.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { Traits } from "../traits/Traits.ts"
import { ConnectionProfile, ConnectionProfileMiddleware } from "./ConnectionProfile.ts"
import { MCP_PATH } from "./sessionRefusal.ts"
import { ProfileTools, ToolError } from "./tools.ts"

/** A domain refusal as the tool's error, with the code and message the management API gives. */
const refusal = (error: ClientFacing) =>
  new ToolError({ code: error.clientError.code, message: `${error.clientError.code}: ${error.clientError.message}` })

const memoryView = (memory: Memory) => ({
  id: memory.id,
  content: memory.content,
  type: memory.type,
  importance: roundImportance(memory.importance),
  cues: memory.cues,
  tags: memory.tags,
  metadata: memory.metadata,
  createdAt: DateTime.formatIso(memory.createdAt)
})

const traitView = (trait: Trait) => ({
  key: trait.key,
  value: trait.value,
  valueType: trait.valueType,
  source: trait.source,
  confidence: trait.confidence
})

/** The tools' handlers: each works on the connection's profile (`ConnectionProfile`), through the slices' services. */
const ToolHandlers = ProfileTools.toLayer(
  Effect.gen(function* () {
    const profiles = yield* Profiles
    const memories = yield* Memories
    const traits = yield* Traits
    const memorySearch = yield* MemorySearch
    const current = Effect.map(ConnectionProfile, ({ profile }) => profile)
    return ProfileTools.of({
      search_memories: ({ filter, limit, query, type }) =>
        Effect.gen(function* () {
          const found = yield* memorySearch
            .search(yield* current, query, { limit, type, filter })
            .pipe(Effect.mapError(refusal))
          return {
            memories: found.memories.map((memory) => ({
              ...memoryView(memory),
              score: memory.score,
              relevant: memory.relevant
            }))
          }
        }),
      add_memory: ({ content, cues, importance, metadata, tags, type }) =>
        Effect.flatMap(current, (profile) =>
          memories.add(profile.id, { content, type, importance, cues, tags, metadata })
        ).pipe(
          Effect.map((memory) => ({ memory: memoryView(memory) })),
          Effect.mapError(refusal)
        ),
      update_memory: ({ id, ...changes }) =>
        Object.values(changes).every((value) => value === undefined)
          ? Effect.fail(
              new ToolError({
                code: "invalid_request_body",
                message:
                  "invalid_request_body: Nothing to change: give content, type, importance, cues, tags or metadata"
              })
            )
          : Effect.flatMap(current, (profile) => memories.update(profile.id, id, changes)).pipe(
              Effect.map((memory) => ({ memory: memoryView(memory) })),
              Effect.mapError(refusal)
            ),
      delete_memory: ({ id }) =>
        Effect.flatMap(current, (profile) => memories.remove(profile.id, id)).pipe(
          Effect.as({ deleted: true as const }),
          Effect.mapError(refusal)
        ),
      get_profile: () =>
        Effect.flatMap(current, (profile) => profileWithTraits(profiles, traits, profile.id)).pipe(
          Effect.map(({ profile, traits }) => ({
            externalId: profile.externalId,
            summary: profile.summary,
            summaryVersion: profile.summaryVersion,
            traits: traits.map(traitView)
          })),
          Effect.mapError(refusal)
        ),
      set_trait: ({ confidence, key, value }) =>
        Effect.flatMap(current, (profile) => traits.putManual(profile.id, key, value, confidence)).pipe(
          Effect.map((trait) => ({ trait: traitView(trait) })),
          Effect.mapError(refusal)
        )
    })
  })
)

/** The profile as it is now (its summary may have been written since the connection began) and its traits. */
const profileWithTraits = (profiles: Profiles["Service"], traits: Traits["Service"], id: string) =>
  Effect.all({ profile: profiles.find(id), traits: traits.list(id) })

/** The connection's profile as resources: its summary (text) and its traits (JSON). */
const ProfileResources = Layer.unwrap(
  Effect.gen(function* () {
    const profiles = yield* Profiles
    const traits = yield* Traits
    const detail = Effect.flatMap(ConnectionProfile, ({ profile }) =>
      Effect.orDie(profileWithTraits(profiles, traits, profile.id))
    )
    return Layer.mergeAll(
      McpServer.resource({
        uri: "profile://summary",
        name: "Profile summary",
        description: "What the gateway knows of the user, in a few sentences (empty until a summary is written)",
        mimeType: "text/plain",
        content: Effect.map(detail, ({ profile }) => profile.summary ?? "")
      }),
      McpServer.resource({
        uri: "profile://traits",
        name: "Profile traits",
        description: "The user's traits: key, value, type, source and confidence",
        mimeType: "application/json",
        content: Effect.map(detail, ({ traits }) => JSON.stringify(traits.map(traitView)))
      })
    )
  })
)

/**
 * An MCP server at `/mcp` (Streamable HTTP) for agents working on one user's memory: the tools and
 * resources above, for the profile the connection names. App keys admit it, as on `/v1`; a browser
 * origin must be one of `CORS_ORIGINS`.
 */
export const McpRoutes = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    return McpServer.layerHttp({
      name: "profile-memory-gateway",
      version: "0.1.0",
      instructions:
        "Tools and resources for the memory of one user: the user this connection names in X-Service-Id. " +
        "Search memories before answering, add what the user wants remembered, keep traits current.",
      path: MCP_PATH,
      protocols: [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26],
      allowedOrigins: config.corsOrigins.filter((origin) => origin !== "*"),
      registrations: Layer.mergeAll(
        McpServer.toolkit(ProfileTools).pipe(Layer.provide(ToolHandlers)),
        ProfileResources
      ).pipe(Layer.provide(ConnectionProfileMiddleware.layer))
    })
  })
)
