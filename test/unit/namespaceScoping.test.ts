import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/**
 * Namespaces hold by construction only if one store decides which profiles a request reaches:
 * `ProfilesRepo`, which scopes every statement by the request's namespace. This reads every SQL
 * statement in the source tree (the text of each sql`…` template) and checks that no other store
 * finds a profile by its user id or reads the profiles table other than by a profile's id.
 */
const src = resolve(dirname(fileURLToPath(import.meta.url)), "../../src")
const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : /\.tsx?$/.test(entry.name) ? [join(dir, entry.name)] : []
  )

/** The literal text of each sql`…` template (a nested template is read as a statement of its own). */
const statements = sourceFiles(src).flatMap((file) =>
  [...readFileSync(file, "utf8").matchAll(/\bsql`([^`]*)`?/g)].map((match) => ({
    file: relative(src, file),
    text: match[1]!.replace(/\s+/g, " ")
  }))
)

const SCOPING_STORE = "profiles/ProfilesRepo.ts"
/** The migrations (one file each) create the tables: they name every column. */
const isMigration = (file: string) => file.startsWith("db/migrations/")
/**
 * Reads of the profiles table that are by a profile's id — passed in, or of the rows a statement writes
 * (`r.profile_id`) — or pick profiles for background work.
 */
const BY_ID = /\b(p\.)?id = (\$\{|r\.profile_id\b)|namespace = \$\{/
const BACKGROUND_ONLY: Record<string, ReadonlyArray<string>> = {
  // Queues the re-embedding of stale vectors for every profile: a job per profile, nothing returned to a request.
  "embedding/VectorsRepo.ts": ["SELECT p.id, 'embed'"],
  "retention/RetentionRepo.ts": [
    // Deletes history past its retention in the namespaces without one of their own: nothing returned to a request.
    "namespace NOT IN (SELECT jsonb_array_elements_text(",
    // Counts the expired memories it deleted by their profiles' namespaces, for each namespace's note of its sweep.
    "FROM gone JOIN profiles p ON p.id = gone.profile_id"
  ]
}

/**
 * Statements that show the user id of profiles reached by their internal id, in rows the caller's
 * namespace already scopes (not a lookup by user id).
 */
const SHOWS_USER_ID: Record<string, string> = {
  // Jobs as operators see them: the jobs of the caller's namespace, each with its profile's user id.
  "jobs/JobsRepo.ts": "LEFT JOIN profiles p ON p.id = j.profile_id",
  // Memory work's usage, written under its profile's namespace and user id (the profile found by its id).
  "usage/UsageRepo.ts": "LEFT JOIN profiles p ON p.id = r.profile_id"
}
const showsUserId = (s: { readonly file: string; readonly text: string }) =>
  SHOWS_USER_ID[s.file] !== undefined && s.text.includes(SHOWS_USER_ID[s.file]!)

describe("profile data is reached through the namespace-scoped store only", () => {
  it("finds the statements (the check reads real SQL)", () => {
    expect(statements.filter((s) => s.file === SCOPING_STORE).length).toBeGreaterThan(5)
    expect(statements.some((s) => s.text.includes("FROM profiles"))).toBe(true)
  })

  it("looks profiles up by user id nowhere but in ProfilesRepo", () => {
    const byUserId = statements.filter(
      (s) => s.text.includes("external_id") && s.file !== SCOPING_STORE && !isMigration(s.file) && !showsUserId(s)
    )
    expect(byUserId).toEqual([])
  })

  it("reads or changes a namespace's webhooks only within the caller's namespace (the worker: by id)", () => {
    const statementsOnWebhooks = statements.filter(
      (s) => /\b(FROM|JOIN|UPDATE) webhooks\b/.test(s.text) && !isMigration(s.file)
    )
    expect(statementsOnWebhooks.length).toBeGreaterThan(4)
    const unscoped = statementsOnWebhooks.filter(
      (s) => !s.text.includes("${within(") && !s.text.includes("namespace = ${") && !/WHERE id = \$\{id\}/.test(s.text)
    )
    expect(unscoped).toEqual([])
  })

  it("reads or changes the profiles table elsewhere only by a profile's id", () => {
    const unscoped = statements.filter(
      (s) =>
        /\b(FROM|JOIN|UPDATE|INTO) profiles\b/.test(s.text) &&
        s.file !== SCOPING_STORE &&
        !isMigration(s.file) &&
        !BY_ID.test(s.text) &&
        !showsUserId(s) &&
        !(BACKGROUND_ONLY[s.file] ?? []).some((marker) => s.text.includes(marker))
    )
    expect(unscoped).toEqual([])
  })
})
