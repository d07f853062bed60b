import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { Statement } from "effect/sql"
import { decodeRows, decodeTotal, type ProfileDeleted, profileDeletedOnForeignKey } from "../db/sqlResults.ts"
import { Memory, type MemoryType, RecentMemory } from "../domain/Memory.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { queueEmbedding } from "../embedding/VectorsRepo.ts"
import { queueProfileJob } from "../jobs/queueProfileJob.ts"
import { decayedFactor, memoryColumns } from "../retrieval/memoryDecaySql.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"

export interface NewMemory {
  readonly content: string
  /** Situations in which it matters. Absent: the extraction model writes them (`EXTRACTION_WRITE_CUES`). */
  readonly cues?: ReadonlyArray<string> | undefined
  readonly type: MemoryType
  /** 0–1; `DEFAULT_IMPORTANCE` when not given. */
  readonly importance?: number | undefined
  /** When the remembered thing happened (ms), if known. */
  readonly occurredAt?: number | undefined
  /** Existing memories of the profile that this one replaces (a fact that changed). */
  readonly supersedes?: ReadonlyArray<string> | undefined
  /** The app's own labels and fields (none when absent). */
  readonly tags?: ReadonlyArray<string> | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  /** One of its namespace's categories (checked by `Memories`). */
  readonly category?: string | undefined
  /** When it expires (ms); `null`: never, whatever its namespace's policy; absent: the policy's. */
  readonly expiresAt?: number | null | undefined
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
  /** Replace the labels or the fields as a whole. */
  readonly tags?: ReadonlyArray<string> | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  /** `null` clears it. */
  readonly category?: string | null | undefined
  /** `null`: never expires. */
  readonly expiresAt?: number | null | undefined
}

/** A memory as it is stored: with its cues, or flagged for the cue writer (which a `cues` job then runs). */
export type StoredMemory = ImportedMemory & {
  readonly cues: ReadonlyArray<string>
  readonly cuesWanted: boolean
  readonly importance: number
}

/** A memory as a write left it: stored by it, or one the profile had already (see `sameText`). */
export interface WrittenMemory {
  readonly memory: Memory
  readonly created: boolean
}

/** A row an insert answers: the memory, and whether this write stored it. */
const WrittenRow = Schema.Struct({ ...Memory.fields, created: Schema.Boolean })

/** Whether a write also queues the profile's `embed` job, in the same statement. */
export interface EmbeddingOption {
  readonly queueEmbedding: boolean
}

/** What a change does beyond its fields: queue the `embed` job; flag a memory without cues for the cue writer. */
export interface ChangeOptions extends EmbeddingOption {
  readonly wantCues: boolean
}

const IdRow = Schema.Struct({ id: Schema.String })

/** One page of a profile's memories, and how many there are in all (of the type asked for). */
export interface MemoryPage {
  readonly memories: ReadonlyArray<Memory>
  readonly total: number
}

/** The SQL of memories: rows in, decoded rows out; the rules are in `Memories`. */
export class MemoriesRepo extends Context.Service<
  MemoriesRepo,
  {
    /** A page of the profile's memories, best first (importance × decay as of now). */
    readonly page: (
      profileId: ProfileId,
      options: {
        readonly type: MemoryType | undefined
        readonly category?: string | undefined
        readonly limit: number
        readonly offset: number
      }
    ) => Effect.Effect<MemoryPage>
    /** The newest memories, short form. */
    readonly recent: (profileId: ProfileId, limit: number) => Effect.Effect<ReadonlyArray<RecentMemory>>
    /** Every memory of the profile, oldest first. */
    readonly all: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<Memory>>
    /** Which of these ids (UUIDs) name memories of the profile, superseded ones included; as stored (lower case). */
    readonly existingIds: (profileId: ProfileId, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>>
    /**
     * Inserts memories with ids chosen here, unless the profile has a current memory of the same type
     * and text already (`sameText`), or one given before them is; marks the ones they supersede (a
     * repeat supersedes them by the memory it repeats) and counts the change for the summary. Returns,
     * in the order given, what each one is now: the memory stored, or the one it repeats. Writes of one
     * profile take turns, so two at once never both store the same text.
     */
    readonly insert: (
      profileId: ProfileId,
      memories: ReadonlyArray<StoredMemory>,
      options: EmbeddingOption
    ) => Effect.Effect<ReadonlyArray<WrittenMemory>, ProfileDeleted>
    /**
     * `memoryId` must be a UUID. `None` when the profile has no such memory. New cues settle the
     * cue writer's flag; with `wantCues`, a memory left without cues is flagged.
     */
    readonly update: (
      profileId: ProfileId,
      memoryId: string,
      changes: MemoryChanges,
      options: ChangeOptions
    ) => Effect.Effect<Option.Option<Memory>>
    /** `memoryId` must be a UUID. `None` when the profile has no such memory. */
    readonly one: (profileId: ProfileId, memoryId: string) => Effect.Effect<Option.Option<Memory>>
    /** `memoryId` must be a UUID. False when the profile has no such memory. */
    readonly remove: (profileId: ProfileId, memoryId: string) => Effect.Effect<boolean>
  }
>()("gateway/memories/MemoriesRepo") {
  static readonly layer = Layer.effect(
    MemoriesRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const halfLives = (yield* RetrievalConfig).memoryHalfLifeDays
      const memory = memoryColumns(sql, halfLives)

      const embed = (profileId: ProfileId, options: EmbeddingOption, condition?: Statement.Fragment) =>
        options.queueEmbedding ? sql`, embed AS (${queueEmbedding(sql, profileId, condition)})` : sql``

      const cueWriting = (profileId: ProfileId, wanted: boolean, condition: Statement.Fragment) =>
        wanted ? sql`, cue_job AS (${queueProfileJob(sql, "cues", profileId, condition)})` : sql``

      const page = (
        profileId: ProfileId,
        options: {
          readonly type: MemoryType | undefined
          readonly category?: string | undefined
          readonly limit: number
          readonly offset: number
        }
      ) => {
        const ofType = sql.and([
          options.type === undefined ? sql`true` : sql`type = ${options.type}`,
          options.category === undefined ? sql`true` : sql`category = ${options.category}`
        ])
        return Effect.all(
          [
            sql`
            SELECT ${memory} FROM memories
            WHERE profile_id = ${profileId} AND ${ofType}
            ORDER BY importance * ${decayedFactor(sql, halfLives)} DESC, created_at DESC, id
            LIMIT ${options.limit} OFFSET ${options.offset}`.pipe(Effect.orDie, decodeRows(Memory)),
            sql`SELECT count(*)::int AS total FROM memories WHERE profile_id = ${profileId} AND ${ofType}`.pipe(
              Effect.orDie,
              decodeTotal
            )
          ],
          { concurrency: 2 }
        ).pipe(Effect.map(([memories, total]) => ({ memories, total })))
      }

      const recent = (profileId: ProfileId, limit: number) =>
        sql`SELECT id, content, type, importance, created_at FROM memories
            WHERE profile_id = ${profileId} ORDER BY created_at DESC, id DESC LIMIT ${limit}`.pipe(
          Effect.orDie,
          decodeRows(RecentMemory)
        )

      const all = (profileId: ProfileId) =>
        sql`SELECT ${memory} FROM memories WHERE profile_id = ${profileId} ORDER BY created_at, id`.pipe(
          Effect.orDie,
          decodeRows(Memory)
        )

      const existingIds = (profileId: ProfileId, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed([])
          : sql`
            SELECT id::text AS id FROM memories
            WHERE profile_id = ${profileId} AND id IN (SELECT jsonb_array_elements_text(${sql.json(ids)})::uuid)`.pipe(
              Effect.orDie,
              decodeRows(IdRow),
              Effect.map((rows) => rows.map((row) => row.id))
            )

      /**
       * A memory's text as repeats are told apart: case and runs of white space do not count, so
       * "Has a dog named Rex" and "has a  DOG named rex" are one memory, as a reader sees them (a
       * caller's own trimming and typing slips differ there). Punctuation and everything else does:
       * a memory written by hand is meant as written, and the extraction model's looser rule (which
       * also drops punctuation, and reinforces) would take "Likes C++" for "Likes C". Compared in full,
       * not by a hash: only within one profile's current memories of one type.
       */
      const sameText = (text: Statement.Fragment) =>
        sql`lower(btrim(regexp_replace(${text}, '[[:space:]]+', ' ', 'g')))`

      const insert = (profileId: ProfileId, memories: ReadonlyArray<StoredMemory>, options: EmbeddingOption) => {
        const rows = memories.map((memory, ord) => ({
          id: randomUUID(),
          ord,
          content: memory.content,
          cues: memory.cues,
          cues_wanted: memory.cuesWanted,
          type: memory.type,
          importance: memory.importance,
          created_at: memory.createdAt === undefined ? null : new Date(memory.createdAt).toISOString(),
          occurred_at: memory.occurredAt === undefined ? null : new Date(memory.occurredAt).toISOString(),
          supersedes: memory.supersedes ?? [],
          tags: memory.tags ?? [],
          metadata: memory.metadata ?? {},
          category: memory.category ?? null,
          expires_at:
            memory.expiresAt === undefined || memory.expiresAt === null
              ? null
              : new Date(memory.expiresAt).toISOString(),
          expiry_explicit: memory.expiresAt !== undefined
        }))
        const write = sql`
          WITH input AS (
            SELECT x.*, ${sameText(sql`x.content`)} AS text_key
            FROM jsonb_to_recordset(${sql.json(rows)})
              AS x(id uuid, ord int, content text, cues jsonb, cues_wanted boolean, type text, importance float8,
                   created_at timestamptz, occurred_at timestamptz, supersedes jsonb, tags jsonb, metadata jsonb,
                   category text, expires_at timestamptz, expiry_explicit boolean)
          ),
          replaced AS (
            SELECT i.id AS new_id, old.id::uuid AS old_id FROM input i, jsonb_array_elements_text(i.supersedes) AS old(id)
          ),
          -- The first given memory of each type and text; a later one repeats it.
          firsts AS (
            SELECT DISTINCT ON (type, text_key) id, type, text_key FROM input ORDER BY type, text_key, ord
          ),
          -- The current memory (the oldest) that a first one repeats; never one this write replaces.
          existing AS (
            SELECT DISTINCT ON (f.id) f.id AS first_id, m.id AS memory_id
            FROM firsts f
            JOIN memories m ON m.profile_id = ${profileId} AND m.superseded_by IS NULL AND m.type = f.type
                           AND (m.expires_at IS NULL OR m.expires_at > now())
                           AND ${sameText(sql`m.content`)} = f.text_key
            WHERE m.id NOT IN (SELECT old_id FROM replaced)
            ORDER BY f.id, m.created_at, m.id
          ),
          inserted AS (
            INSERT INTO memories (id, profile_id, content, cues, cues_wanted, type, importance, created_at, occurred_at,
                                  tags, metadata, category, expires_at, expiry_explicit)
            SELECT i.id, ${profileId}, i.content, i.cues, i.cues_wanted, i.type, i.importance, coalesce(i.created_at, now()),
                   i.occurred_at, ARRAY(SELECT jsonb_array_elements_text(i.tags)), i.metadata, i.category, i.expires_at,
                   i.expiry_explicit
            FROM input i JOIN firsts f ON f.id = i.id
            WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.first_id = i.id)
            RETURNING *
          ),
          -- What each given memory is now: the one stored for it, or the one it repeats.
          written AS (
            SELECT i.id AS input_id, i.ord, coalesce(e.memory_id, f.id) AS memory_id,
                   e.memory_id IS NULL AND f.id = i.id AS created
            FROM input i
            JOIN firsts f ON f.type = i.type AND f.text_key = i.text_key
            LEFT JOIN existing e ON e.first_id = f.id
          ),
          superseded AS (
            UPDATE memories m SET superseded_by = w.memory_id
            FROM replaced r JOIN written w ON w.input_id = r.new_id
            WHERE m.id = r.old_id AND m.profile_id = ${profileId} AND m.id <> w.memory_id
            RETURNING m.superseded_by
          ),
          -- A change for the summary: each memory stored, and each replaced by one the profile had.
          touched AS (
            UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary
              + (SELECT count(*) FROM inserted)
              + (SELECT count(*) FROM superseded WHERE superseded_by NOT IN (SELECT id FROM inserted))
            WHERE id = ${profileId} AND (EXISTS (SELECT 1 FROM inserted) OR EXISTS (SELECT 1 FROM superseded))
          )
          ${embed(profileId, options, sql`EXISTS (SELECT 1 FROM inserted)`)}
          ${cueWriting(
            profileId,
            memories.some((m) => m.cuesWanted),
            sql`EXISTS (SELECT 1 FROM inserted WHERE cues_wanted)`
          )}
          SELECT w.created, x.* FROM written w
          JOIN (SELECT ${memory} FROM inserted
                UNION ALL
                SELECT ${memory} FROM memories WHERE id IN (SELECT memory_id FROM existing)) x ON x.id = w.memory_id
          ORDER BY w.ord`
        // Writes of one profile take turns (to the commit): the next one's statement sees what this one stored.
        const turn = sql`SELECT pg_advisory_xact_lock(hashtextextended(${`memory-writes:${profileId}`}, 0))`
        return turn.pipe(
          Effect.andThen(write),
          sql.withTransaction,
          profileDeletedOnForeignKey,
          decodeRows(WrittenRow),
          Effect.map((rows) =>
            rows.map(({ created, ...memory }): WrittenMemory => ({ memory: new Memory(memory), created }))
          )
        )
      }

      const update = (profileId: ProfileId, memoryId: string, changes: MemoryChanges, options: ChangeOptions) => {
        const occurred =
          changes.occurredAt === undefined
            ? sql`occurred_at`
            : changes.occurredAt === null
              ? sql`NULL`
              : sql`${new Date(changes.occurredAt).toISOString()}::timestamptz`
        return sql`
          WITH updated AS (
            UPDATE memories SET
              content = coalesce(${changes.content ?? null}::text, content),
              cues = coalesce(${changes.cues === undefined ? null : JSON.stringify(changes.cues)}::jsonb, cues),
              type = coalesce(${changes.type ?? null}::text, type),
              importance = coalesce(${changes.importance ?? null}::float8, importance),
              occurred_at = ${occurred},
              tags = ${
                changes.tags === undefined
                  ? sql`tags`
                  : sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(changes.tags)}::jsonb))`
              },
              metadata = coalesce(${changes.metadata === undefined ? null : JSON.stringify(changes.metadata)}::jsonb, metadata),
              category = ${changes.category === undefined ? sql`category` : sql`${changes.category}::text`},
              ${
                changes.expiresAt === undefined
                  ? sql``
                  : sql`expiry_explicit = true, expires_at = ${
                      changes.expiresAt === null ? null : new Date(changes.expiresAt).toISOString()
                    }::timestamptz,`
              }
              cues_wanted = ${
                changes.cues !== undefined
                  ? sql`false`
                  : options.wantCues
                    ? sql`cues_wanted OR jsonb_array_length(cues) = 0`
                    : sql`cues_wanted`
              }
            WHERE id = ${memoryId}::uuid AND profile_id = ${profileId}
            RETURNING *
          ),
          touched AS (
            UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + 1
            WHERE id = ${profileId} AND EXISTS (SELECT 1 FROM updated)
          )
          ${embed(profileId, options, sql`EXISTS (SELECT 1 FROM updated)`)}
          ${cueWriting(profileId, options.wantCues, sql`EXISTS (SELECT 1 FROM updated WHERE cues_wanted)`)}
          SELECT ${memory} FROM updated`.pipe(
          Effect.orDie,
          decodeRows(Memory),
          Effect.map((rows) => Option.fromUndefinedOr(rows[0]))
        )
      }

      const remove = (profileId: ProfileId, memoryId: string) =>
        sql`
          WITH deleted AS (DELETE FROM memories WHERE id = ${memoryId}::uuid AND profile_id = ${profileId} RETURNING 1),
            touched AS (UPDATE profiles SET updated_at = now() WHERE id = ${profileId} AND EXISTS (SELECT 1 FROM deleted))
          SELECT 1 FROM deleted`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        )

      const one = (profileId: ProfileId, memoryId: string) =>
        sql`SELECT ${memory} FROM memories WHERE id = ${memoryId}::uuid AND profile_id = ${profileId}`.pipe(
          Effect.orDie,
          decodeRows(Memory),
          Effect.map((rows) => Option.fromUndefinedOr(rows[0]))
        )

      return MemoriesRepo.of({ page, recent, all, existingIds, insert, update, one, remove })
    })
  )
}
