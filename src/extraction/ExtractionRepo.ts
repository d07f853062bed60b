import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import type { Statement } from "effect/sql"
import { AttachmentKind } from "../domain/Attachment.ts"
import type { MemorySource, MemoryType } from "../domain/Memory.ts"
import { Profile, type ProfileId } from "../domain/Profile.ts"
import type { Trait, TraitValueType } from "../domain/Trait.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { bytesParameter, memoryTextHash, queueEmbedding } from "../embedding/VectorsRepo.ts"
import type { QuantizedVector } from "../embedding/vectors.ts"
import { decayedFactor } from "../retrieval/memoryDecaySql.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import { traitsOfProfile } from "../snapshots/traitsOfProfile.ts"
import { ExtractionConfig } from "./ExtractionConfig.ts"

/** How many of the profile's best memories the summary model sees. */
const KNOWN_MEMORIES = 30

export type TraitOutcome = "created" | "updated" | "reinforced" | "kept_manual" | "kept_existing"
export type MemoryOutcome = "created" | "reinforced"

/** An extracted memory, ready to be merged into the profile. */
export interface ExtractedMemory {
  readonly content: string
  readonly cues: ReadonlyArray<string>
  readonly type: MemoryType
  readonly importance: number
  readonly occurredAt: number | undefined
  /** Ids of the profile's memories it replaces. */
  readonly supersedes: ReadonlyArray<string>
  /** The current memory it repeats (same text, spelling or meaning): reinforced instead of stored. */
  readonly duplicateOf: string | undefined
  /** Its vector, computed before the transaction, stored with it. */
  readonly vector: { readonly model: string; readonly value: QuantizedVector } | undefined
  /** What it was learned from: the turn's text, or one of its images or files. */
  readonly source: MemorySource
  /** One of its namespace's memory categories, if the model chose one. */
  readonly category: string | null
}

/** One line of a turn, with when it was said (relative dates in it are read against that). */
export interface ConversationLine {
  /** The message's id (absent: a line not read from the database). */
  readonly id?: string
  readonly role: string
  readonly content: string
  readonly at: Date
  /** The refs (`a1`) of its images and files the model is sent. */
  readonly attachments?: ReadonlyArray<string>
}

/** An image or a file of a job's messages, as stored: its content while it is held, else only its facts. */
export const StoredAttachment = Schema.Struct({
  messageId: Schema.String,
  position: Schema.Int,
  kind: AttachmentKind,
  mediaType: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  data: Schema.NullOr(Schema.Uint8Array),
  text: Schema.NullOr(Schema.String),
  bytes: Schema.Int,
  /** An earlier run of the job (or its failure) released it. */
  released: Schema.Boolean
})
export type StoredAttachment = typeof StoredAttachment.Type

export interface ExtractedTrait {
  readonly key: string
  readonly value: unknown
  readonly valueType: TraitValueType
  readonly category: string
  readonly confidence: number
}

export interface Provenance {
  readonly jobId: string
  readonly messageIds: ReadonlyArray<string>
}

const TraitWrite = Schema.Array(
  Schema.Struct({
    written: Schema.Int,
    oldValue: Schema.NullOr(Schema.Json),
    oldSource: Schema.NullOr(Schema.String),
    newValue: Schema.NullOr(Schema.Json)
  })
)
const MemoryWrite = Schema.Array(Schema.Struct({ reinforcedId: Schema.NullOr(Schema.String) }))
const Conversation = Schema.Array(
  Schema.Struct({ id: Schema.String, role: Schema.String, content: Schema.String, createdAt: Schema.Date })
)
const Contents = Schema.Array(Schema.Struct({ content: Schema.String }))
const Version = Schema.Array(Schema.Struct({ summaryVersion: Schema.Int }))

/**
 * What extraction reads and writes. Merges follow the rules that protect what people set:
 * a manual trait is never changed; an extracted value replaces an extracted one only with enough
 * confidence or when the stored one is old; a repeated memory reinforces the stored one.
 */
export class ExtractionRepo extends Context.Service<
  ExtractionRepo,
  {
    readonly profile: (profileId: string) => Effect.Effect<Profile>
    readonly conversation: (messageIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ConversationLine>>
    /** The images and files of these messages, in the order they were said. */
    readonly attachments: (messageIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StoredAttachment>>
    /**
     * Lets go of the content of these messages' images and files (their digest stays): once their
     * extraction committed, or failed for good.
     */
    readonly releaseAttachments: (messageIds: ReadonlyArray<string>) => Effect.Effect<void>
    readonly traits: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<Trait>>
    /** The profile's best memories right now, by importance × decay. */
    readonly topMemories: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<string>>
    readonly applyTrait: (
      profileId: ProfileId,
      trait: ExtractedTrait,
      provenance: Provenance
    ) => Effect.Effect<TraitOutcome>
    /**
     * Stores a new memory, or reinforces the one it repeats (its `duplicateOf`, or one with the same
     * text written meanwhile), and marks the memories it supersedes.
     */
    readonly applyMemory: (
      profileId: ProfileId,
      memory: ExtractedMemory,
      provenance: Provenance
    ) => Effect.Effect<MemoryOutcome>
    /** Counts new information and, when enough has changed, queues a summary rewrite. */
    readonly noteChanges: (profileId: ProfileId, changes: number) => Effect.Effect<{ readonly summaryQueued: boolean }>
    readonly writeSummary: (profileId: ProfileId, summary: string) => Effect.Effect<number>
  }
>()("gateway/extraction/ExtractionRepo") {
  static readonly layer = Layer.effect(
    ExtractionRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const settings = yield* ExtractionConfig
      const decay = decayedFactor(sql, (yield* RetrievalConfig).memoryHalfLifeDays)
      const embeddingsOn = (yield* Embedder).model !== undefined
      const decode =
        <S extends Schema.Codec<unknown, unknown>>(schema: S) =>
        (rows: unknown) =>
          Schema.decodeUnknownEffect(schema)(rows).pipe(Effect.orDie)

      const profile = (profileId: string) =>
        sql`SELECT * FROM profiles WHERE id = ${profileId}`.pipe(
          Effect.orDie,
          Effect.flatMap(decode(Schema.Array(Profile))),
          Effect.flatMap((rows) =>
            rows[0] === undefined ? Effect.die(new Error(`profile ${profileId} vanished`)) : Effect.succeed(rows[0])
          )
        )

      const conversation = (messageIds: ReadonlyArray<string>) =>
        messageIds.length === 0
          ? Effect.succeed([])
          : sql`SELECT id::text, role, content, created_at FROM messages WHERE ${sql.in("id", messageIds)} ORDER BY created_at, id`.pipe(
              Effect.orDie,
              Effect.flatMap(decode(Conversation)),
              Effect.map((rows) =>
                rows.map(
                  (row): ConversationLine => ({ id: row.id, role: row.role, content: row.content, at: row.createdAt })
                )
              )
            )

      const attachments = (messageIds: ReadonlyArray<string>) =>
        messageIds.length === 0
          ? Effect.succeed([])
          : sql`
              SELECT a.message_id::text, a.position, a.kind, a.media_type, a.filename, a.url, a.data, a.text, a.bytes,
                     a.extracted_at IS NOT NULL AS released
              FROM message_attachments a JOIN messages m ON m.id = a.message_id
              WHERE ${sql.in("a.message_id", messageIds)}
              ORDER BY m.created_at, m.id, a.position`.pipe(
              Effect.orDie,
              Effect.flatMap(decode(Schema.Array(StoredAttachment)))
            )

      const releaseAttachments = (messageIds: ReadonlyArray<string>) =>
        messageIds.length === 0
          ? Effect.void
          : sql`
              UPDATE message_attachments SET data = NULL, url = NULL, text = NULL, extracted_at = now()
              WHERE ${sql.in("message_id", messageIds)} AND extracted_at IS NULL`.pipe(Effect.orDie, Effect.asVoid)

      const traits = (profileId: ProfileId) => traitsOfProfile(sql, profileId)

      const topMemories = (profileId: ProfileId) =>
        sql`SELECT content FROM memories WHERE profile_id = ${profileId} AND (expires_at IS NULL OR expires_at > now())
            ORDER BY importance * ${decay} DESC, created_at DESC LIMIT ${KNOWN_MEMORIES}`.pipe(
          Effect.orDie,
          Effect.flatMap(decode(Contents)),
          Effect.map((rows) => rows.map((row) => row.content))
        )

      const uuids = (ids: ReadonlyArray<string>) => sql`ARRAY(SELECT jsonb_array_elements_text(${sql.json(ids)})::uuid)`

      const applyTrait = Effect.fn("ExtractionRepo.applyTrait")(function* (
        profileId: ProfileId,
        trait: ExtractedTrait,
        provenance: Provenance
      ) {
        const value = sql.json(trait.value)
        const rows = yield* sql`
          WITH previous AS (SELECT value, source FROM traits WHERE profile_id = ${profileId} AND key = ${trait.key}),
          written AS (
            INSERT INTO traits (profile_id, key, value, value_type, category, confidence, source, source_message_ids)
            VALUES (${profileId}, ${trait.key}, ${value}, ${trait.valueType}, ${trait.category}, ${trait.confidence},
                    'extracted', ${uuids(provenance.messageIds)})
            ON CONFLICT (profile_id, key) DO UPDATE SET
              value = EXCLUDED.value, value_type = EXCLUDED.value_type, category = EXCLUDED.category,
              confidence = CASE WHEN traits.value = EXCLUDED.value THEN greatest(traits.confidence, EXCLUDED.confidence)
                                ELSE EXCLUDED.confidence END,
              source_message_ids = CASE WHEN traits.value = EXCLUDED.value
                                        THEN traits.source_message_ids || EXCLUDED.source_message_ids
                                        ELSE EXCLUDED.source_message_ids END,
              updated_at = now()
            WHERE traits.source = 'extracted' AND (
              traits.value = EXCLUDED.value
              OR EXCLUDED.confidence >= traits.confidence - ${settings.confidenceMargin}::float8
              OR traits.updated_at < now() - ${settings.traitMaxAgeDays} * interval '1 day')
            RETURNING value
          ),
          history AS (
            INSERT INTO trait_history (profile_id, key, old_value, new_value, confidence, source, job_id, message_ids)
            SELECT ${profileId}, ${trait.key}, (SELECT value FROM previous), w.value, ${trait.confidence}, 'extracted',
                   ${provenance.jobId}, ${uuids(provenance.messageIds)}
            FROM written w
            WHERE (SELECT value FROM previous) IS DISTINCT FROM w.value
          )
          SELECT (SELECT count(*) FROM written)::int AS written,
                 (SELECT value FROM previous) AS old_value,
                 (SELECT source FROM previous) AS old_source,
                 (SELECT value FROM written) AS new_value`.pipe(Effect.orDie, Effect.flatMap(decode(TraitWrite)))
        const row = rows[0]!
        if (row.written === 0) return row.oldSource === "manual" ? "kept_manual" : "kept_existing"
        if (row.oldSource === null) return "created"
        return JSON.stringify(row.oldValue) === JSON.stringify(row.newValue) ? "reinforced" : "updated"
      })

      const normalized = (text: Statement.Fragment) =>
        sql`btrim(lower(regexp_replace(${text}, '[^[:alnum:]]+', ' ', 'g')))`

      const applyMemory = Effect.fn("ExtractionRepo.applyMemory")(function* (
        profileId: ProfileId,
        memory: ExtractedMemory,
        provenance: Provenance
      ) {
        const replaced = sql`(SELECT jsonb_array_elements_text(${sql.json(memory.supersedes)})::uuid)`
        const vector = memory.vector
        const rows = yield* sql`
          WITH match AS (
            SELECT id FROM memories
            WHERE profile_id = ${profileId} AND superseded_by IS NULL AND id NOT IN ${replaced}
              -- An expired memory the sweep has not removed yet is no longer one to reinforce.
              AND (expires_at IS NULL OR expires_at > now())
              AND (id = ${memory.duplicateOf ?? null}::uuid
                   OR ${normalized(sql`content`)} = ${normalized(sql`${memory.content}`)})
            ORDER BY id = ${memory.duplicateOf ?? null}::uuid DESC NULLS LAST
            LIMIT 1
            FOR UPDATE
          ),
          reinforced AS (
            UPDATE memories SET
              importance = least(1, greatest(importance, ${memory.importance}::float8) + 0.1),
              reinforced_at = now(),
              reinforcement_count = reinforcement_count + 1,
              source_message_ids = ARRAY(SELECT DISTINCT unnest(source_message_ids || ${uuids(provenance.messageIds)}))
            WHERE id IN (SELECT id FROM match)
            RETURNING id
          ),
          inserted AS (
            INSERT INTO memories (profile_id, content, cues, type, importance, occurred_at, source_message_ids, source,
                                  category)
            SELECT ${profileId}, ${memory.content}, ${sql.json(memory.cues)}, ${memory.type}, ${memory.importance},
                   ${memory.occurredAt === undefined ? null : new Date(memory.occurredAt).toISOString()}::timestamptz,
                   ${uuids(provenance.messageIds)}, ${memory.source}, ${memory.category}
            WHERE NOT EXISTS (SELECT 1 FROM match)
            RETURNING id, content, cues
          ),
          superseded AS (
            UPDATE memories SET superseded_by = coalesce((SELECT id FROM inserted), (SELECT id FROM reinforced))
            WHERE profile_id = ${profileId} AND id IN ${replaced}
              AND id <> coalesce((SELECT id FROM inserted), (SELECT id FROM reinforced))
          ),
          vector AS (
            ${
              vector === undefined
                ? embeddingsOn
                  ? queueEmbedding(sql, profileId, sql`EXISTS (SELECT 1 FROM inserted)`)
                  : sql`SELECT 1`
                : sql`
                INSERT INTO memory_vectors (memory_id, profile_id, model, dimensions, content_hash, scale, vector)
                SELECT id, ${profileId}, ${vector.model}, ${vector.value.bytes.length}, ${memoryTextHash(sql, "inserted")},
                       ${vector.value.scale}::float8, ${bytesParameter(vector.value)}
                FROM inserted`
            }
          )
          SELECT (SELECT id::text FROM reinforced) AS reinforced_id`.pipe(
          Effect.orDie,
          Effect.flatMap(decode(MemoryWrite))
        )
        return rows[0]?.reinforcedId === null ? "created" : "reinforced"
      })

      const noteChanges = Effect.fn("ExtractionRepo.noteChanges")(function* (profileId: ProfileId, changes: number) {
        const rows = yield* sql`
          WITH counted AS (
            UPDATE profiles SET changes_since_summary = changes_since_summary + ${changes},
                                updated_at = CASE WHEN ${changes} > 0 THEN now() ELSE updated_at END
            WHERE id = ${profileId}
            RETURNING id, changes_since_summary, summary_updated_at
          )
          INSERT INTO extraction_jobs (profile_id, kind, message_ids)
          SELECT id, 'summary', '{}' FROM counted c
          WHERE (c.changes_since_summary >= ${settings.summaryEveryChanges}
                 OR (c.changes_since_summary > 0
                     AND (c.summary_updated_at IS NULL
                          OR c.summary_updated_at < now() - ${settings.summaryMaxAgeHours} * interval '1 hour')))
            AND NOT EXISTS (SELECT 1 FROM extraction_jobs j
                            WHERE j.profile_id = c.id AND j.kind = 'summary' AND j.status = 'pending')
          RETURNING id`.pipe(Effect.orDie)
        return { summaryQueued: rows.length > 0 }
      })

      const writeSummary = Effect.fn("ExtractionRepo.writeSummary")(function* (profileId: ProfileId, summary: string) {
        const rows = yield* sql`
          WITH updated AS (
            UPDATE profiles
            SET summary = ${summary}, summary_version = summary_version + 1, summary_updated_at = now(),
                updated_at = now(), changes_since_summary = 0
            WHERE id = ${profileId}
            RETURNING id, summary_version, summary
          ),
          history AS (
            INSERT INTO summary_history (profile_id, version, summary, source)
            SELECT id, summary_version, summary, 'extracted' FROM updated
          )
          SELECT summary_version FROM updated`.pipe(Effect.orDie, Effect.flatMap(decode(Version)))
        return rows[0]?.summaryVersion ?? 0
      })

      return ExtractionRepo.of({
        profile,
        conversation,
        attachments,
        releaseAttachments,
        traits,
        topMemories,
        applyTrait,
        applyMemory,
        noteChanges,
        writeSummary
      })
    })
  ).pipe(Layer.provide([Embedder.layer]))
}
