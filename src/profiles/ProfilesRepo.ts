import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows, decodeTotal } from "../db/sqlResults.ts"
import { SummaryVersion } from "../domain/History.ts"
import { Message } from "../domain/Message.ts"
import { addressedNamespace, currentNamespace, type NamespaceScope } from "../domain/Namespace.ts"
import { ListedProfile, Profile, ProfileId, SHARED_PROFILE_ID } from "../domain/Profile.ts"

/**
 * Which profile a statement is about: the one with this internal id, the one with this external id
 * (both a user's: never the shared profile), or the namespace's shared profile.
 */
export type ProfileKey =
  | { readonly _tag: "InternalId"; readonly id: string }
  | { readonly _tag: "ExternalId"; readonly externalId: string }
  | { readonly _tag: "Shared" }

export interface ProfilePage {
  readonly profiles: ReadonlyArray<ListedProfile>
  readonly total: number
}

/** A listed profile's row: the profile, its counts and its last message, flat. */
const ListedRow = Schema.Struct({
  ...Profile.fields,
  traitCount: Schema.Int,
  memoryCount: Schema.Int,
  messageCount: Schema.Int,
  lastActivityAt: Schema.DateTimeUtcFromDate
})

const listed = ({ lastActivityAt, memoryCount, messageCount, traitCount, ...profile }: typeof ListedRow.Type) =>
  new ListedProfile({
    ...profile,
    counts: { traits: traitCount, memories: memoryCount, messages: messageCount },
    lastActivityAt
  })

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

const RemovedRow = Schema.Struct({
  id: Schema.NullOr(Schema.String),
  externalId: Schema.NullOr(Schema.String),
  profiles: Schema.Int,
  traits: Schema.Int,
  memories: Schema.Int,
  messages: Schema.Int
})

const NamespaceCount = Schema.Struct({ namespace: Schema.String, count: Schema.Int })

/** `%`, `_` and the escape character itself match literally. */
export const escapeLikePattern = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/**
 * The SQL of profiles: rows in, decoded rows out; the rules are in `Profiles`. Every statement is
 * scoped to the current request's namespace (`CurrentNamespace`), here and only here: the other
 * stores reach a profile's data by the id this one found in scope. A namespace's shared profile
 * (`SHARED_PROFILE_ID`) is no user: only its own key finds it, and no listing or count holds it.
 */
export class ProfilesRepo extends Context.Service<
  ProfilesRepo,
  {
    readonly find: (key: ProfileKey) => Effect.Effect<Option.Option<Profile>>
    /** Newest first; `search` matches part of the external id, literally. */
    readonly page: (options: {
      readonly limit: number
      readonly offset: number
      readonly search: string | undefined
    }) => Effect.Effect<ProfilePage>
    /**
     * Inserts a profile unless its external id exists already; with `unlessInternalId` (the id is a
     * UUID) also unless it is another profile's internal id, checked in the same statement.
     * `None` when nothing was inserted.
     */
    readonly insert: (
      externalId: string,
      options: { readonly unlessInternalId: boolean }
    ) => Effect.Effect<Option.Option<Profile>>
    /** Inserts the namespace's shared profile unless it has one; `None` when nothing was inserted. */
    readonly insertShared: Effect.Effect<Option.Option<Profile>>
    /** Sets the summary, bumps its version and writes the history row, in one statement. */
    readonly setSummary: (key: ProfileKey, summary: string) => Effect.Effect<Option.Option<Profile>>
    /** Deletes the profile with its traits, memories and messages, in one statement. */
    readonly remove: (key: ProfileKey) => Effect.Effect<Option.Option<RemovedProfile>>
    /** Every message of the profile, oldest first. */
    readonly messages: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<Message>>
    /** The newest messages, newest first; with `before` (a message id), those older than it. */
    readonly recentMessages: (
      profileId: ProfileId,
      options: { readonly limit: number; readonly before: string | undefined }
    ) => Effect.Effect<ReadonlyArray<Message>>
    /** How many profiles each namespace in scope holds, by name. */
    readonly countByNamespace: Effect.Effect<ReadonlyArray<{ readonly namespace: string; readonly count: number }>>
    /** Every summary version, newest first. */
    readonly summaryHistory: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<SummaryVersion>>
  }
>()("gateway/profiles/ProfilesRepo") {
  static readonly layer = Layer.effect(
    ProfilesRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient

      /** The namespaces a statement may see: the scope's one, or any for the global admin's internal ids. */
      const within = (scope: NamespaceScope) => (scope._tag === "One" ? sql`namespace = ${scope.name}` : sql`true`)

      /**
       * The condition on `profiles` a key stands for, in the scope (an external id never reaches the
       * uuid column). A user id is always looked up in one namespace, and so is its shared profile.
       */
      const named = (key: ProfileKey, scope: NamespaceScope) => {
        switch (key._tag) {
          case "InternalId":
            return sql`id = ${key.id}::uuid AND NOT shared AND ${within(scope)}`
          case "ExternalId":
            return sql`namespace = ${addressedNamespace(scope)} AND external_id = ${key.externalId} AND NOT shared`
          case "Shared":
            return sql`namespace = ${addressedNamespace(scope)} AND shared`
        }
      }

      /** A subquery for the id of the profile a key names. */
      const idOf = (key: ProfileKey, scope: NamespaceScope) => sql`(SELECT id FROM profiles WHERE ${named(key, scope)})`

      const first = (rows: ReadonlyArray<Profile>) => Option.fromUndefinedOr(rows[0])

      const find = (key: ProfileKey) =>
        Effect.flatMap(currentNamespace, (scope) =>
          sql`SELECT * FROM profiles WHERE ${named(key, scope)}`.pipe(
            Effect.orDie,
            decodeRows(Profile),
            Effect.map(first)
          )
        )

      const page = (options: {
        readonly limit: number
        readonly offset: number
        readonly search: string | undefined
      }) =>
        Effect.flatMap(currentNamespace, (scope) => {
          const search =
            options.search === undefined || options.search === ""
              ? sql`true`
              : sql`external_id ILIKE ${`%${escapeLikePattern(options.search)}%`}`
          const matches = sql`${within(scope)} AND NOT shared AND ${search}`
          return Effect.all(
            [
              // Counted for the page only, each through its profile index.
              sql`SELECT p.*,
                (SELECT count(*) FROM traits t WHERE t.profile_id = p.id)::int AS trait_count,
                (SELECT count(*) FROM memories m WHERE m.profile_id = p.id)::int AS memory_count,
                (SELECT count(*) FROM messages g WHERE g.profile_id = p.id)::int AS message_count,
                greatest(p.updated_at, (SELECT max(g.created_at) FROM messages g WHERE g.profile_id = p.id)) AS last_activity_at
              FROM profiles p WHERE ${matches}
              ORDER BY p.created_at DESC, p.id DESC LIMIT ${options.limit} OFFSET ${options.offset}`.pipe(
                Effect.orDie,
                decodeRows(ListedRow),
                Effect.map((rows) => rows.map(listed))
              ),
              sql`SELECT count(*)::int AS total FROM profiles WHERE ${matches}`.pipe(Effect.orDie, decodeTotal)
            ],
            { concurrency: 2 }
          ).pipe(Effect.map(([profiles, total]) => ({ profiles, total })))
        })

      const insert = (externalId: string, options: { readonly unlessInternalId: boolean }) =>
        Effect.flatMap(currentNamespace, (scope) => {
          const notAnInternalId = options.unlessInternalId
            ? sql`WHERE NOT EXISTS (SELECT 1 FROM profiles WHERE id = ${externalId}::uuid AND NOT shared AND ${within(scope)})`
            : sql``
          return sql`
            INSERT INTO profiles (namespace, external_id) SELECT ${addressedNamespace(scope)}, ${externalId}::text ${notAnInternalId}
            ON CONFLICT (namespace, external_id) DO NOTHING RETURNING *`.pipe(
            Effect.orDie,
            decodeRows(Profile),
            Effect.map(first)
          )
        })

      const insertShared = Effect.flatMap(currentNamespace, (scope) =>
        sql`
          INSERT INTO profiles (namespace, external_id, shared) VALUES (${addressedNamespace(scope)}, ${SHARED_PROFILE_ID}, true)
          ON CONFLICT DO NOTHING RETURNING *`.pipe(Effect.orDie, decodeRows(Profile), Effect.map(first))
      )

      const setSummary = (key: ProfileKey, summary: string) =>
        // A summary set by hand restarts the count of changes.
        Effect.flatMap(currentNamespace, (scope) =>
          sql`
          WITH updated AS (
            UPDATE profiles
            SET summary = ${summary}, summary_version = summary_version + 1,
                summary_updated_at = now(), updated_at = now(), changes_since_summary = 0
            WHERE id = ${idOf(key, scope)}
            RETURNING *
          ),
          history AS (
            INSERT INTO summary_history (profile_id, version, summary, source)
            SELECT id, summary_version, summary, 'manual' FROM updated
          )
          SELECT * FROM updated`.pipe(Effect.orDie, decodeRows(Profile), Effect.map(first))
        )

      const remove = (key: ProfileKey) =>
        Effect.flatMap(currentNamespace, (scope) =>
          sql`
          WITH target AS (SELECT id, external_id FROM profiles WHERE id = ${idOf(key, scope)}),
            deleted_traits AS (DELETE FROM traits WHERE profile_id = (SELECT id FROM target) RETURNING 1),
            deleted_memories AS (DELETE FROM memories WHERE profile_id = (SELECT id FROM target) RETURNING 1),
            deleted_messages AS (DELETE FROM messages WHERE profile_id = (SELECT id FROM target) RETURNING 1),
            deleted_profiles AS (DELETE FROM profiles WHERE id = (SELECT id FROM target) RETURNING 1)
          SELECT (SELECT id::text FROM target) AS id, (SELECT external_id FROM target) AS external_id,
                 (SELECT count(*) FROM deleted_profiles)::int AS profiles,
                 (SELECT count(*) FROM deleted_traits)::int AS traits,
                 (SELECT count(*) FROM deleted_memories)::int AS memories,
                 (SELECT count(*) FROM deleted_messages)::int AS messages`.pipe(
            Effect.orDie,
            decodeRows(RemovedRow),
            Effect.map((rows): Option.Option<RemovedProfile> => {
              const row = rows[0]
              if (row === undefined || row.profiles === 0 || row.id === null || row.externalId === null)
                return Option.none()
              return Option.some({
                profile: { id: ProfileId.make(row.id), externalId: row.externalId },
                deleted: { traits: row.traits, memories: row.memories, messages: row.messages }
              })
            })
          )
        )

      const messages = (profileId: ProfileId) =>
        sql`SELECT * FROM messages WHERE profile_id = ${profileId} ORDER BY created_at, id`.pipe(
          Effect.orDie,
          decodeRows(Message)
        )

      const recentMessages = (
        profileId: ProfileId,
        options: { readonly limit: number; readonly before: string | undefined }
      ) => {
        // A `before` that names none of the profile's messages compares with NULL: nothing is older than it.
        const older =
          options.before === undefined
            ? sql`true`
            : sql`(created_at, id) < (SELECT created_at, id FROM messages WHERE id = ${options.before}::uuid AND profile_id = ${profileId})`
        return sql`SELECT * FROM messages WHERE profile_id = ${profileId} AND ${older}
                   ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`.pipe(Effect.orDie, decodeRows(Message))
      }

      const summaryHistory = (profileId: ProfileId) =>
        sql`
          SELECT version, summary, source, created_at FROM summary_history
          WHERE profile_id = ${profileId} ORDER BY version DESC`.pipe(Effect.orDie, decodeRows(SummaryVersion))

      const countByNamespace = Effect.flatMap(currentNamespace, (scope) =>
        sql`SELECT namespace, count(*)::int AS count FROM profiles WHERE ${within(scope)} AND NOT shared GROUP BY namespace`.pipe(
          Effect.orDie,
          decodeRows(NamespaceCount)
        )
      )

      return ProfilesRepo.of({
        find,
        page,
        insert,
        insertShared,
        setSummary,
        remove,
        messages,
        recentMessages,
        countByNamespace,
        summaryHistory
      })
    })
  )
}
