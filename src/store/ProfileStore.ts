import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Predicate, Result, Schema } from "effect"
import type { SqlError, Statement } from "effect/sql"
import {
  ExternalIdConflict,
  InvalidTraitValue,
  MemoryNotFound,
  ProfileNotFound,
  TraitNotFound,
  UnknownSupersededMemory
} from "../domain/errors.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { queueEmbedding } from "./VectorStore.ts"
import { SummaryVersion, TraitChange } from "../domain/History.ts"
import { Memory, type MemoryType, RecentMemory } from "../domain/Memory.ts"
import { Message } from "../domain/Message.ts"
import { Profile, ProfileId } from "../domain/Profile.ts"
import { isUuid } from "../domain/ProfileRef.ts"
import { Trait } from "../domain/Trait.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { ContextCache } from "./ContextCache.ts"
import { CUSTOM_CATEGORY } from "../traits/TraitDefinition.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { type TraitTyping, validateTraitValue } from "../traits/validateTraitValue.ts"
import { decayedFactor, memoryColumns } from "./memoryDecay.ts"

export interface ProfilePage {
  readonly profiles: ReadonlyArray<Profile>
  readonly total: number
}

export interface ProfileDetail {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  readonly recentMemories: ReadonlyArray<RecentMemory>
}

export interface ProfileExport {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  readonly memories: ReadonlyArray<Memory>
  readonly messages: ReadonlyArray<Message>
}

export interface DeletedCounts {
  readonly traits: number
  readonly memories: number
  readonly messages: number
}

/** What a profile delete removed: the profile (named, so the caller sees it was the one meant) and its data. */
export interface RemovedProfile {
  readonly profile: { readonly id: ProfileId; readonly externalId: string }
  readonly deleted: DeletedCounts
}

export interface NewMemory {
  readonly content: string
  readonly cues: ReadonlyArray<string>
  readonly type: MemoryType
  readonly importance: number
  /** When the remembered thing happened (ms), if known. */
  readonly occurredAt?: number | undefined
  /** Existing memories of the profile that this one replaces (a fact that changed). */
  readonly supersedes?: ReadonlyArray<string> | undefined
}

/** A memory brought in from elsewhere: it may keep its original creation time. */
export interface ImportedMemory extends NewMemory {
  readonly createdAt?: number | undefined
}

/** Changes to a memory; absent fields stay, `occurredAt: null` clears the time. */
export interface MemoryChanges {
  readonly content?: string | undefined
  readonly cues?: ReadonlyArray<string> | undefined
  readonly type?: MemoryType | undefined
  readonly importance?: number | undefined
  readonly occurredAt?: number | null | undefined
}

/** How many memories a single-profile read lists as `recentMemories`. */
export const RECENT_MEMORIES = 10

/**
 * Profiles and everything attached to them. Every operation that takes a `ref` accepts the
 * profile's internal UUID or the caller's external id. A UUID-shaped ref always means the internal
 * id, never an external id that looks the same (such a profile is reached by its internal id).
 */
export class ProfileStore extends Context.Service<ProfileStore, {
  readonly list: (options: {
    readonly limit: number
    readonly offset: number
    readonly search: string | undefined
  }) => Effect.Effect<ProfilePage>
  /**
   * The profile of an external id (already normalised by the user-id rule), created on first use.
   * Refuses to create one whose external id is another profile's internal id.
   */
  readonly getOrCreate: (
    externalId: string
  ) => Effect.Effect<{ readonly profile: Profile; readonly created: boolean }, ExternalIdConflict>
  readonly find: (ref: string) => Effect.Effect<Profile, ProfileNotFound>
  readonly detail: (ref: string) => Effect.Effect<ProfileDetail, ProfileNotFound>
  readonly setSummary: (ref: string, summary: string) => Effect.Effect<Profile, ProfileNotFound>
  readonly remove: (ref: string) => Effect.Effect<RemovedProfile, ProfileNotFound>
  readonly exportAll: (ref: string) => Effect.Effect<ProfileExport, ProfileNotFound>
  readonly listTraits: (ref: string) => Effect.Effect<ReadonlyArray<Trait>, ProfileNotFound>
  readonly putManualTrait: (
    ref: string,
    key: string,
    value: unknown,
    confidence: number
  ) => Effect.Effect<Trait, ProfileNotFound | InvalidTraitValue>
  readonly deleteTrait: (ref: string, key: string) => Effect.Effect<void, ProfileNotFound | TraitNotFound>
  readonly listMemories: (ref: string, options: {
    readonly type: MemoryType | undefined
    readonly limit: number
    readonly offset: number
  }) => Effect.Effect<ReadonlyArray<Memory>, ProfileNotFound>
  readonly addMemory: (ref: string, memory: NewMemory) => Effect.Effect<Memory, ProfileNotFound | UnknownSupersededMemory>
  /** Changes a memory; a new text is embedded again in the background. */
  readonly updateMemory: (
    ref: string,
    memoryId: string,
    changes: MemoryChanges
  ) => Effect.Effect<Memory, ProfileNotFound | MemoryNotFound>
  /** Adds many memories in one transaction (all or none). */
  readonly importMemories: (
    ref: string,
    memories: ReadonlyArray<ImportedMemory>
  ) => Effect.Effect<ReadonlyArray<Memory>, ProfileNotFound | UnknownSupersededMemory>
  readonly deleteMemory: (ref: string, memoryId: string) => Effect.Effect<void, ProfileNotFound | MemoryNotFound>
  /** Every change of one trait, newest first. */
  readonly traitHistory: (ref: string, key: string) => Effect.Effect<ReadonlyArray<TraitChange>, ProfileNotFound>
  /** Every summary version, newest first. */
  readonly summaryHistory: (ref: string) => Effect.Effect<ReadonlyArray<SummaryVersion>, ProfileNotFound>
}>()("gateway/store/ProfileStore") {
  static readonly layer = Layer.effect(
    ProfileStore,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const traitSchema = yield* TraitSchema
      const valueTypes = (yield* PluginHost).valueTypes
      const halfLives = (yield* AppConfig).memoryHalfLifeDays
      const cache = yield* ContextCache
      const memory = memoryColumns(sql, halfLives)
      const embeddingsOn = (yield* Embedder).model !== undefined

      /**
       * A subquery for the id of the profile a ref names: a UUID is the internal id and nothing else
       * (an app user cannot take over a path by choosing another profile's UUID as their id); a
       * non-UUID is an external id and never reaches the uuid column.
       */
      const profileIdOf = (ref: string) =>
        isUuid(ref)
          ? sql`(SELECT id FROM profiles WHERE id = ${ref}::uuid)`
          : sql`(SELECT id FROM profiles WHERE external_id = ${ref})`

      const byExternalId = (externalId: string) =>
        orDie(sql`SELECT * FROM profiles WHERE external_id = ${externalId}`).pipe(
          Effect.flatMap((rows) => decodeRows(Profile, rows)),
          Effect.map((profiles) => profiles[0])
        )

      const find = Effect.fn("ProfileStore.find")(function*(ref: string) {
        const rows = yield* orDie(sql`SELECT * FROM profiles WHERE id = ${profileIdOf(ref)}`)
        const [profile] = yield* decodeRows(Profile, rows)
        if (profile === undefined) return yield* new ProfileNotFound({ ref })
        return profile
      })

      const traitsOf = (profileId: ProfileId) =>
        orDie(sql`SELECT * FROM traits WHERE profile_id = ${profileId} ORDER BY key`).pipe(
          Effect.flatMap((rows) => decodeRows(Trait, rows))
        )

      const list = Effect.fn("ProfileStore.list")(function*(options: {
        readonly limit: number
        readonly offset: number
        readonly search: string | undefined
      }) {
        const matches = options.search === undefined || options.search === ""
          ? sql`true`
          : sql`external_id ILIKE ${`%${escapeLikePattern(options.search)}%`}`
        const [rows, counts] = yield* Effect.all([
          orDie(sql`SELECT * FROM profiles WHERE ${matches}
                    ORDER BY created_at DESC, id DESC LIMIT ${options.limit} OFFSET ${options.offset}`),
          orDie(sql<{ total: number }>`SELECT count(*)::int AS total FROM profiles WHERE ${matches}`)
        ], { concurrency: 2 })
        return { profiles: yield* decodeRows(Profile, rows), total: counts[0]?.total ?? 0 }
      })

      const getOrCreate = Effect.fn("ProfileStore.getOrCreate")(function*(externalId: string) {
        // Read first: the common case writes nothing. ON CONFLICT makes concurrent first calls safe.
        const existing = yield* byExternalId(externalId)
        if (existing !== undefined) return { profile: existing, created: false }
        // In the same statement: no new external id may be another profile's internal id, which paths name.
        const notAnInternalId = isUuid(externalId)
          ? sql`WHERE NOT EXISTS (SELECT 1 FROM profiles WHERE id = ${externalId}::uuid)`
          : sql``
        const inserted = yield* orDie(sql`
          INSERT INTO profiles (external_id) SELECT ${externalId}::text ${notAnInternalId}
          ON CONFLICT (external_id) DO NOTHING RETURNING *`)
        if (inserted.length > 0) return { profile: (yield* decodeRows(Profile, inserted))[0]!, created: true }
        // Either a concurrent call created it, or the guard refused it.
        const raced = yield* byExternalId(externalId)
        if (raced !== undefined) return { profile: raced, created: false }
        return yield* new ExternalIdConflict({ externalId })
      })

      const detail = Effect.fn("ProfileStore.detail")(function*(ref: string) {
        const profile = yield* find(ref)
        const [traits, memories] = yield* Effect.all([
          traitsOf(profile.id),
          orDie(sql`SELECT id, content, type, importance, created_at FROM memories
                    WHERE profile_id = ${profile.id} ORDER BY created_at DESC, id DESC LIMIT ${RECENT_MEMORIES}`)
            .pipe(Effect.flatMap((rows) => decodeRows(RecentMemory, rows)))
        ], { concurrency: 2 })
        return { profile, traits, recentMemories: memories }
      })

      const setSummary = Effect.fn("ProfileStore.setSummary")(function*(ref: string, summary: string) {
        // One statement: the version bump cannot lose an update to a concurrent writer, and the
        // history row is written with it. A summary set by hand restarts the count of changes.
        const rows = yield* orDie(sql`
          WITH updated AS (
            UPDATE profiles
            SET summary = ${summary}, summary_version = summary_version + 1,
                summary_updated_at = now(), updated_at = now(), changes_since_summary = 0
            WHERE id = ${profileIdOf(ref)}
            RETURNING *
          ),
          history AS (
            INSERT INTO summary_history (profile_id, version, summary, source)
            SELECT id, summary_version, summary, 'manual' FROM updated
          )
          SELECT * FROM updated`)
        const [profile] = yield* decodeRows(Profile, rows)
        if (profile === undefined) return yield* new ProfileNotFound({ ref })
        yield* cache.invalidate(profile.id)
        return profile
      })

      const remove = Effect.fn("ProfileStore.remove")(function*(ref: string) {
        const rows = yield* orDie(sql<{
          id: string | null
          externalId: string | null
          profiles: number
          traits: number
          memories: number
          messages: number
        }>`
          WITH target AS (SELECT id, external_id FROM profiles WHERE id = ${profileIdOf(ref)}),
            deleted_traits AS (DELETE FROM traits WHERE profile_id = (SELECT id FROM target) RETURNING 1),
            deleted_memories AS (DELETE FROM memories WHERE profile_id = (SELECT id FROM target) RETURNING 1),
            deleted_messages AS (DELETE FROM messages WHERE profile_id = (SELECT id FROM target) RETURNING 1),
            deleted_profiles AS (DELETE FROM profiles WHERE id = (SELECT id FROM target) RETURNING 1)
          SELECT (SELECT id::text FROM target) AS id, (SELECT external_id FROM target) AS external_id,
                 (SELECT count(*) FROM deleted_profiles)::int AS profiles,
                 (SELECT count(*) FROM deleted_traits)::int AS traits,
                 (SELECT count(*) FROM deleted_memories)::int AS memories,
                 (SELECT count(*) FROM deleted_messages)::int AS messages`)
        const counts = rows[0]
        if (counts === undefined || counts.profiles === 0 || counts.id === null || counts.externalId === null) {
          return yield* new ProfileNotFound({ ref })
        }
        // Gone from this process's cache before the delete returns (other replicas hear the notification).
        yield* cache.invalidate(counts.id)
        return {
          profile: { id: ProfileId.make(counts.id), externalId: counts.externalId },
          deleted: { traits: counts.traits, memories: counts.memories, messages: counts.messages }
        }
      })

      const exportAll = Effect.fn("ProfileStore.exportAll")(function*(ref: string) {
        const profile = yield* find(ref)
        const [traits, memories, messages] = yield* Effect.all([
          traitsOf(profile.id),
          orDie(sql`SELECT ${memory} FROM memories WHERE profile_id = ${profile.id} ORDER BY created_at, id`)
            .pipe(Effect.flatMap((rows) => decodeRows(Memory, rows))),
          orDie(sql`SELECT * FROM messages WHERE profile_id = ${profile.id} ORDER BY created_at, id`)
            .pipe(Effect.flatMap((rows) => decodeRows(Message, rows)))
        ], { concurrency: 3 })
        return { profile, traits, memories, messages }
      })

      const listTraits = Effect.fn("ProfileStore.listTraits")(function*(ref: string) {
        const profile = yield* find(ref)
        return yield* traitsOf(profile.id)
      })

      const putManualTrait = Effect.fn("ProfileStore.putManualTrait")(
        function*(ref: string, key: string, input: unknown, confidence: number) {
          const profile = yield* find(ref)
          const definition = traitSchema.lookup(key)
          let typing: TraitTyping
          if (Option.isSome(definition)) {
            typing = { _tag: "Declared", definition: definition.value }
          } else {
            const existing = yield* orDie(sql<{ valueType: Trait["valueType"] }>`
              SELECT value_type FROM traits WHERE profile_id = ${profile.id} AND key = ${key}`)
            typing = existing[0] === undefined ? { _tag: "New" } : { _tag: "Established", valueType: existing[0].valueType }
          }
          const valid = validateTraitValue(valueTypes, typing, input)
          if (Result.isFailure(valid)) return yield* new InvalidTraitValue({ key, reason: valid.failure })
          const category = Option.match(definition, { onNone: () => CUSTOM_CATEGORY, onSome: (d) => d.category })
          // An undeclared trait keeps the type of its first value, even against a concurrent writer.
          const sameTypeOnly = Option.isNone(definition)
          const value = sql.json(valid.success.value)
          const rows = yield* sql`
            WITH previous AS (SELECT value FROM traits WHERE profile_id = ${profile.id} AND key = ${key}),
            written AS (
              INSERT INTO traits (profile_id, key, value, value_type, category, confidence, source)
              VALUES (${profile.id}, ${key}, ${value}, ${valid.success.valueType}, ${category}, ${confidence}, 'manual')
              ON CONFLICT (profile_id, key) DO UPDATE
                SET value = EXCLUDED.value, value_type = EXCLUDED.value_type, category = EXCLUDED.category,
                    confidence = EXCLUDED.confidence, source = 'manual', updated_at = now()
                WHERE ${sameTypeOnly ? sql`traits.value_type = EXCLUDED.value_type` : sql`true`}
              RETURNING *
            ),
            history AS (
              INSERT INTO trait_history (profile_id, key, old_value, new_value, confidence, source)
              SELECT ${profile.id}, ${key}, (SELECT value FROM previous), ${value}, ${confidence}, 'manual'
              FROM written
            ),
            touched AS (
              UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + 1
              WHERE id = ${profile.id} AND EXISTS (SELECT 1 FROM written)
            )
            SELECT * FROM written`.pipe(profileGoneAs(ref))
          const [trait] = yield* decodeRows(Trait, rows)
          if (trait === undefined) {
            return yield* new InvalidTraitValue({ key, reason: "the trait was just written with a different type" })
          }
          yield* cache.invalidate(profile.id)
          return trait
        }
      )

      const deleteTrait = Effect.fn("ProfileStore.deleteTrait")(function*(ref: string, key: string) {
        const profile = yield* find(ref)
        const rows = yield* orDie(sql`
          WITH deleted AS (DELETE FROM traits WHERE profile_id = ${profile.id} AND key = ${key} RETURNING value),
            history AS (
              INSERT INTO trait_history (profile_id, key, old_value, new_value, source)
              SELECT ${profile.id}, ${key}, value, NULL, 'manual' FROM deleted
            ),
            touched AS (
              UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + 1
              WHERE id = ${profile.id} AND EXISTS (SELECT 1 FROM deleted)
            )
          SELECT 1 FROM deleted`)
        if (rows.length === 0) return yield* new TraitNotFound({ key })
        yield* cache.invalidate(profile.id)
      })

      const listMemories = Effect.fn("ProfileStore.listMemories")(function*(ref: string, options: {
        readonly type: MemoryType | undefined
        readonly limit: number
        readonly offset: number
      }) {
        const profile = yield* find(ref)
        const rows = yield* orDie(sql`
          SELECT ${memory} FROM memories
          WHERE profile_id = ${profile.id} AND ${options.type === undefined ? sql`true` : sql`type = ${options.type}`}
          ORDER BY importance * ${decayedFactor(sql, halfLives)} DESC, created_at DESC, id
          LIMIT ${options.limit} OFFSET ${options.offset}`)
        return yield* decodeRows(Memory, rows)
      })

      /** With embeddings on, a memory write queues the profile's `embed` job in the same statement. */
      const queueEmbed = (profileId: ProfileId, condition?: Statement.Fragment) =>
        embeddingsOn ? sql`, embed AS (${queueEmbedding(sql, profileId, condition)})` : sql``

      /** Fails unless every id names a memory of the profile (superseded ones included). */
      const checkSuperseded = Effect.fn("ProfileStore.checkSuperseded")(function*(profileId: ProfileId, ids: ReadonlyArray<string>) {
        const unique = [...new Set(ids)]
        if (unique.length === 0) return
        const wellFormed = unique.filter(isUuid)
        const rows = wellFormed.length === 0 ? [] : yield* orDie(sql<{ id: string }>`
          SELECT id::text AS id FROM memories
          WHERE profile_id = ${profileId} AND id IN (SELECT jsonb_array_elements_text(${sql.json(wellFormed)})::uuid)`)
        const found = new Set(rows.map((row) => row.id.toLowerCase()))
        const unknown = unique.filter((id) => !found.has(id.toLowerCase()))
        if (unknown.length > 0) return yield* new UnknownSupersededMemory({ memoryIds: unknown })
      })

      /**
       * Inserts memories with ids chosen here, marks the ones they supersede, counts the change for
       * the summary and queues their embedding: one statement.
       */
      const insertMemories = (profileId: ProfileId, memories: ReadonlyArray<ImportedMemory>, ref: string) => {
        const rows = memories.map((memory, ord) => ({
          id: randomUUID(),
          ord,
          content: memory.content,
          cues: memory.cues,
          type: memory.type,
          importance: memory.importance,
          created_at: memory.createdAt === undefined ? null : new Date(memory.createdAt).toISOString(),
          occurred_at: memory.occurredAt === undefined ? null : new Date(memory.occurredAt).toISOString(),
          supersedes: memory.supersedes ?? []
        }))
        const replaced = rows.flatMap((row) => row.supersedes.map((old) => ({ old_id: old, new_id: row.id })))
        return sql`
          WITH input AS (
            SELECT * FROM jsonb_to_recordset(${sql.json(rows)})
              AS x(id uuid, ord int, content text, cues jsonb, type text, importance float8, created_at timestamptz,
                   occurred_at timestamptz)
          ),
          inserted AS (
            INSERT INTO memories (id, profile_id, content, cues, type, importance, created_at, occurred_at)
            SELECT id, ${profileId}, content, cues, type, importance, coalesce(created_at, now()), occurred_at FROM input
            RETURNING *
          ),
          superseded AS (
            UPDATE memories m SET superseded_by = r.new_id
            FROM jsonb_to_recordset(${sql.json(replaced)}) AS r(old_id uuid, new_id uuid)
            WHERE m.id = r.old_id AND m.profile_id = ${profileId}
          ),
          touched AS (
            UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + ${rows.length}
            WHERE id = ${profileId}
          )
          ${queueEmbed(profileId)}
          SELECT ${memory} FROM inserted
          ORDER BY (SELECT ord FROM input WHERE input.id = inserted.id)`.pipe(profileGoneAs(ref))
      }

      const addMemory = Effect.fn("ProfileStore.addMemory")(function*(ref: string, input: NewMemory) {
        const profile = yield* find(ref)
        yield* checkSuperseded(profile.id, input.supersedes ?? [])
        const rows = yield* insertMemories(profile.id, [input], ref)
        yield* cache.invalidate(profile.id)
        return (yield* decodeRows(Memory, rows))[0]!
      })

      const importMemories = Effect.fn("ProfileStore.importMemories")(function*(ref: string, input: ReadonlyArray<ImportedMemory>) {
        const profile = yield* find(ref)
        if (input.length === 0) return []
        yield* checkSuperseded(profile.id, input.flatMap((memory) => memory.supersedes ?? []))
        const rows = yield* insertMemories(profile.id, input, ref)
        yield* cache.invalidate(profile.id)
        return yield* decodeRows(Memory, rows)
      })

      const updateMemory = Effect.fn("ProfileStore.updateMemory")(function*(ref: string, memoryId: string, changes: MemoryChanges) {
        const profile = yield* find(ref)
        if (!isUuid(memoryId)) return yield* new MemoryNotFound({ memoryId })
        const occurred = changes.occurredAt === undefined
          ? sql`occurred_at`
          : changes.occurredAt === null
          ? sql`NULL`
          : sql`${new Date(changes.occurredAt).toISOString()}::timestamptz`
        const rows = yield* orDie(sql`
          WITH updated AS (
            UPDATE memories SET
              content = coalesce(${changes.content ?? null}::text, content),
              cues = coalesce(${changes.cues === undefined ? null : JSON.stringify(changes.cues)}::jsonb, cues),
              type = coalesce(${changes.type ?? null}::text, type),
              importance = coalesce(${changes.importance ?? null}::float8, importance),
              occurred_at = ${occurred}
            WHERE id = ${memoryId}::uuid AND profile_id = ${profile.id}
            RETURNING *
          ),
          touched AS (
            UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + 1
            WHERE id = ${profile.id} AND EXISTS (SELECT 1 FROM updated)
          )
          ${changes.content === undefined && changes.cues === undefined ? sql`` : queueEmbed(profile.id, sql`EXISTS (SELECT 1 FROM updated)`)}
          SELECT ${memory} FROM updated`)
        const [updated] = yield* decodeRows(Memory, rows)
        if (updated === undefined) return yield* new MemoryNotFound({ memoryId })
        yield* cache.invalidate(profile.id)
        return updated
      })

      const deleteMemory = Effect.fn("ProfileStore.deleteMemory")(function*(ref: string, memoryId: string) {
        const profile = yield* find(ref)
        if (!isUuid(memoryId)) return yield* new MemoryNotFound({ memoryId })
        const rows = yield* orDie(sql`
          WITH deleted AS (DELETE FROM memories WHERE id = ${memoryId}::uuid AND profile_id = ${profile.id} RETURNING 1),
            touched AS (UPDATE profiles SET updated_at = now() WHERE id = ${profile.id} AND EXISTS (SELECT 1 FROM deleted))
          SELECT 1 FROM deleted`)
        if (rows.length === 0) return yield* new MemoryNotFound({ memoryId })
        yield* cache.invalidate(profile.id)
      })

      const traitHistory = Effect.fn("ProfileStore.traitHistory")(function*(ref: string, key: string) {
        const profile = yield* find(ref)
        const rows = yield* orDie(sql`
          SELECT old_value, new_value, confidence, source, job_id::text AS job_id,
                 to_jsonb(message_ids) AS message_ids, created_at
          FROM trait_history WHERE profile_id = ${profile.id} AND key = ${key}
          ORDER BY id DESC`)
        return yield* decodeRows(TraitChange, rows)
      })

      const summaryHistory = Effect.fn("ProfileStore.summaryHistory")(function*(ref: string) {
        const profile = yield* find(ref)
        const rows = yield* orDie(sql`
          SELECT version, summary, source, created_at FROM summary_history
          WHERE profile_id = ${profile.id} ORDER BY version DESC`)
        return yield* decodeRows(SummaryVersion, rows)
      })

      return ProfileStore.of({
        traitHistory,
        summaryHistory,
        list,
        getOrCreate,
        find,
        detail,
        setSummary,
        remove,
        exportAll,
        listTraits,
        putManualTrait,
        deleteTrait,
        listMemories,
        addMemory,
        updateMemory,
        importMemories,
        deleteMemory
      })
    })
  )
}

/** `%`, `_` and the escape character itself match literally. */
export const escapeLikePattern = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** Database failures are not part of the domain: they surface as a logged 500. */
const orDie = <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.orDie(effect)

const FOREIGN_KEY_VIOLATION = "23503"

/** A write that loses the race against a profile delete fails its foreign key: report the profile as gone. */
const profileGoneAs = (ref: string) => <A>(effect: Effect.Effect<A, SqlError.SqlError>) =>
  effect.pipe(
    Effect.catchTag("SqlError", (error) =>
      Predicate.hasProperty(error.reason.cause, "code") && error.reason.cause.code === FOREIGN_KEY_VIOLATION
        ? Effect.fail(new ProfileNotFound({ ref }))
        : Effect.die(error))
  )

const decodeRows = <S extends Schema.Codec<unknown, unknown>>(schema: S, rows: ReadonlyArray<unknown>) =>
  Schema.decodeUnknownEffect(Schema.Array(schema))(rows).pipe(Effect.orDie)
