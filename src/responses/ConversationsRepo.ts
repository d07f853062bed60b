import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, DateTime, Effect, Layer, Option, Predicate, Schema } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import { decodeRows } from "../db/sqlResults.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { asSent, storableJson } from "../domain/storableText.ts"
import { ConversationLimitReached } from "./ConversationLimitReached.ts"
import { ConversationsConfig, conversationsFromEnv } from "./ConversationsConfig.ts"
import { itemIdPrefix, listedItem, ownItemId } from "./listedItem.ts"

/** A conversation as the Conversations API shows it. */
export interface Conversation {
  readonly id: string
  readonly object: "conversation"
  readonly created_at: number
  readonly metadata: Readonly<Record<string, unknown>>
}

const ConversationRow = Schema.Struct({
  id: Schema.String,
  profileId: Schema.String,
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.DateTimeUtcFromDate
})

const ItemRow = Schema.Struct({ id: Schema.String, item: Schema.Record(Schema.String, Schema.Unknown) })

/** What one user's conversations hold. */
const Usage = Schema.Struct({ conversations: Schema.Int, bytes: Schema.Number })

export type ConversationItem = Readonly<Record<string, unknown>>

/** A conversation with all its items, as a profile's export holds it. */
export const ExportedConversation = Schema.Struct({
  id: Schema.String,
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.DateTimeUtcFromDate,
  items: Schema.Array(Schema.Record(Schema.String, Schema.Unknown))
})
export type ExportedConversation = typeof ExportedConversation.Type

export interface ItemPage {
  readonly data: ReadonlyArray<ConversationItem>
  readonly hasMore: boolean
}

const hex = () => randomBytes(24).toString("hex")

/**
 * An item as it is kept: as it was sent (storable: NUL and unpaired surrogates become U+FFFD, as in
 * turns), so the next turn sends the provider the same bytes; and its id, its own or a new one named
 * like OpenAI's (`msg_…`, `fc_…`, `item_…`), kept beside it.
 */
const keptItem = (item: unknown): { readonly id: string; readonly item: ConversationItem } => {
  const fields: ConversationItem = Predicate.isObject(item) ? item : {}
  return { id: ownItemId(fields) ?? `${itemIdPrefix(fields["type"] ?? "message")}_${hex()}`, item: fields }
}

/** An item as the Conversations API shows it (and a profile's export): in OpenAI's shape, with its id (`listedItem`). */
const shownItem = (row: typeof ItemRow.Type): ConversationItem => listedItem(row.item, row.id)

/** A conversation as the database gives it for an export: its items as kept, with their ids, in order. */
const ExportedRow = Schema.Struct({
  id: Schema.String,
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.DateTimeUtcFromDate,
  items: Schema.Array(ItemRow)
})

/** The bytes a JSON value takes as the database keeps it (jsonb's text: about what the client sent). */
export const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8")

/**
 * The Conversations API's state, where the gateway keeps it (`conversations`, `conversation_items`):
 * a conversation belongs to the user who created it and is reached by its id within that user's
 * profile only; its items are kept in order, and an item whose id is already there is not added
 * again (a client sending back what it was given duplicates nothing). Each conversation counts the
 * bytes it holds, so a user's share is checked (`room`) before a write: `CONVERSATIONS_MAX_PER_USER`
 * conversations, `CONVERSATIONS_MAX_BYTES_PER_USER` bytes.
 */
export class ConversationsRepo extends Context.Service<
  ConversationsRepo,
  {
    readonly create: (
      profileId: ProfileId,
      metadata: Readonly<Record<string, unknown>>,
      items: ReadonlyArray<unknown>
    ) => Effect.Effect<Conversation>
    readonly find: (id: string, profileId: ProfileId) => Effect.Effect<Option.Option<Conversation>>
    readonly update: (
      id: string,
      profileId: ProfileId,
      metadata: Readonly<Record<string, unknown>>
    ) => Effect.Effect<Option.Option<Conversation>>
    readonly remove: (id: string, profileId: ProfileId) => Effect.Effect<boolean>
    /** Adds the items in order (with ids); answers those added. Call once the conversation is found for its user. */
    readonly addItems: (id: string, items: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ConversationItem>>
    readonly items: (
      id: string,
      options: { readonly order: "asc" | "desc"; readonly limit: number; readonly after: string | undefined }
    ) => Effect.Effect<ItemPage>
    readonly item: (id: string, itemId: string) => Effect.Effect<Option.Option<ConversationItem>>
    readonly removeItem: (id: string, itemId: string) => Effect.Effect<boolean>
    /**
     * Whether the user has room for `bytes` more (and for one more conversation, when `newConversation`):
     * fails with the limit reached otherwise.
     */
    readonly room: (
      profileId: ProfileId,
      wanted: { readonly bytes: number; readonly newConversation: boolean }
    ) => Effect.Effect<void, ConversationLimitReached>
    /** Every conversation of the profile with its items, oldest first (its export). */
    readonly ofProfile: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<ExportedConversation>>
    /**
     * Every item of the profile's conversation as it was sent (what the provider gets again), oldest
     * first; `None` if the profile has no such conversation.
     */
    readonly history: (
      id: string,
      profileId: ProfileId
    ) => Effect.Effect<Option.Option<ReadonlyArray<ConversationItem>>>
  }
>()("gateway/responses/ConversationsRepo") {
  static readonly layer = Layer.effect(
    ConversationsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const limits = yield* ConversationsConfig
      const conversations = decodeRows(ConversationRow)
      const itemRows = decodeRows(ItemRow)
      const usage = decodeRows(Usage)
      const columns = sql`c.id, c.profile_id::text AS profile_id, c.metadata, c.created_at`
      const shown = (row: typeof ConversationRow.Type): Conversation => ({
        id: row.id,
        object: "conversation",
        created_at: Math.floor(DateTime.toEpochMillis(row.createdAt) / 1000),
        metadata: row.metadata
      })
      const first = (rows: ReadonlyArray<typeof ConversationRow.Type>) =>
        Option.map(Option.fromUndefinedOr(rows[0]), shown)

      const addItems = (id: string, items: ReadonlyArray<unknown>) =>
        items.length === 0
          ? Effect.succeed([])
          : sql`
              WITH added AS (
                INSERT INTO conversation_items (conversation_id, id, item)
                SELECT ${id}, x.kept->>'id', x.kept->'item'
                FROM json_array_elements(${asSent(items.map(keptItem))}::json) WITH ORDINALITY AS x (kept, n)
                ORDER BY x.n
                ON CONFLICT (conversation_id, id) DO NOTHING
                RETURNING id, item, position
              ), grown AS (
                UPDATE conversations SET size_bytes = size_bytes + (SELECT coalesce(sum(octet_length(item::text)), 0) FROM added)
                WHERE id = ${id}
              )
              SELECT id, item FROM added ORDER BY position`.pipe(
              itemRows,
              Effect.orDie,
              Effect.map((rows) => rows.map(shownItem))
            )

      return ConversationsRepo.of({
        create: (profileId, metadata, items) =>
          Effect.gen(function* () {
            const kept = storableJson(metadata)
            const [row] = yield* sql`
              INSERT INTO conversations AS c (id, profile_id, metadata, size_bytes)
              VALUES (${`conv_${hex()}`}, ${profileId}, ${sql.json(kept)}, octet_length(${sql.json(kept)}::jsonb::text))
              RETURNING ${columns}`.pipe(conversations, Effect.orDie)
            yield* addItems(row!.id, items)
            return shown(row!)
          }).pipe(sql.withTransaction, Effect.orDie),
        find: (id, profileId) =>
          sql`SELECT ${columns} FROM conversations c WHERE c.id = ${id} AND c.profile_id = ${profileId}`.pipe(
            conversations,
            Effect.orDie,
            Effect.map(first)
          ),
        update: (id, profileId, metadata) => {
          const kept = sql.json(storableJson(metadata))
          return sql`
            UPDATE conversations c SET metadata = ${kept},
              size_bytes = c.size_bytes - octet_length(c.metadata::text) + octet_length(${kept}::jsonb::text)
            WHERE c.id = ${id} AND c.profile_id = ${profileId}
            RETURNING ${columns}`.pipe(conversations, Effect.orDie, Effect.map(first))
        },
        remove: (id, profileId) =>
          sql`DELETE FROM conversations c WHERE c.id = ${id} AND c.profile_id = ${profileId} RETURNING 1`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows.length > 0)
          ),
        addItems,
        items: (id, { order, limit, after }) =>
          Effect.gen(function* () {
            const from =
              after === undefined
                ? sql`true`
                : order === "asc"
                  ? sql`i.position > (SELECT position FROM conversation_items WHERE conversation_id = ${id} AND id = ${after})`
                  : sql`i.position < (SELECT position FROM conversation_items WHERE conversation_id = ${id} AND id = ${after})`
            const rows = yield* sql`
              SELECT i.id, i.item FROM conversation_items i
              WHERE i.conversation_id = ${id} AND ${from}
              ORDER BY i.position ${order === "asc" ? sql`ASC` : sql`DESC`}
              LIMIT ${limit + 1}`.pipe(itemRows, Effect.orDie)
            return { data: rows.slice(0, limit).map(shownItem), hasMore: rows.length > limit }
          }),
        item: (id, itemId) =>
          sql`SELECT i.id, i.item FROM conversation_items i WHERE i.conversation_id = ${id} AND i.id = ${itemId}`.pipe(
            itemRows,
            Effect.orDie,
            Effect.map((rows) => Option.map(Option.fromUndefinedOr(rows[0]), shownItem))
          ),
        removeItem: (id, itemId) =>
          sql`
            WITH gone AS (
              DELETE FROM conversation_items WHERE conversation_id = ${id} AND id = ${itemId}
              RETURNING octet_length(item::text) AS bytes
            ), shrunk AS (
              UPDATE conversations SET size_bytes = size_bytes - gone.bytes FROM gone WHERE conversations.id = ${id}
            )
            SELECT 1 FROM gone`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows.length > 0)
          ),
        room: (profileId, wanted) =>
          Effect.gen(function* () {
            const [used] = yield* sql`
              SELECT count(*)::int AS conversations, coalesce(sum(size_bytes), 0)::float8 AS bytes
              FROM conversations WHERE profile_id = ${profileId}`.pipe(usage, Effect.orDie)
            const { conversations: count = 0, bytes = 0 } = used ?? {}
            if (wanted.newConversation && count >= limits.maxPerUser)
              return yield* new ConversationLimitReached({ limit: "conversations", maximum: limits.maxPerUser })
            if (bytes + wanted.bytes > limits.maxBytesPerUser)
              return yield* new ConversationLimitReached({ limit: "bytes", maximum: limits.maxBytesPerUser })
          }),
        ofProfile: (profileId) =>
          sql`
            SELECT c.id, c.metadata, c.created_at,
                   coalesce((SELECT json_agg(json_build_object('id', i.id, 'item', i.item) ORDER BY i.position)
                             FROM conversation_items i WHERE i.conversation_id = c.id), '[]') AS items
            FROM conversations c WHERE c.profile_id = ${profileId} ORDER BY c.created_at, c.id`.pipe(
            decodeRows(ExportedRow),
            Effect.orDie,
            Effect.map((rows) => rows.map((row) => ({ ...row, items: row.items.map(shownItem) })))
          ),
        history: (id, profileId) =>
          Effect.gen(function* () {
            const owned = yield* sql`SELECT 1 FROM conversations WHERE id = ${id} AND profile_id = ${profileId}`.pipe(
              Effect.orDie
            )
            if (owned.length === 0) return Option.none()
            const rows = yield* sql`
              SELECT i.id, i.item FROM conversation_items i WHERE i.conversation_id = ${id} ORDER BY i.position`.pipe(
              itemRows,
              Effect.orDie
            )
            return Option.some(rows.map((row) => row.item))
          })
      })
    })
  )

  /**
   * The live service on the database you provide, with the configuration's default limits (the
   * `ConversationsConfig` it checks is in the output). It reads by the profile's internal id: needs
   * only a `PgClient`.
   */
  static readonly layerTest = ConversationsRepo.layer.pipe(
    Layer.provideMerge(layerDefaults(ConversationsConfig, conversationsFromEnv))
  )
}
