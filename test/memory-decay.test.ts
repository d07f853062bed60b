import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { MemoryType } from "../src/domain/Memory.ts"
import { DAY_MS, decayFactorOf, type MemoryHalfLives } from "../src/domain/memoryDecay.ts"
import { decayedFactor } from "../src/retrieval/memoryDecaySql.ts"
import * as TestDatabase from "./support/database.ts"

/** A different half-life for every type, so a type read as another one shows (the rule in the process: test/unit/memoryDecay.test.ts). */
const halfLives: MemoryHalfLives = { fact: 365, preference: 180, event: 30, context: 7 }

interface Spec {
  readonly type: MemoryType
  readonly base: number
  /** Days before (negative: after) the start of the test. */
  readonly createdDaysAgo: number
  readonly accessedDaysAgo?: number
  readonly reinforcedDaysAgo?: number
}

const specs: ReadonlyArray<Spec> = [
  { type: "fact", base: 1, createdDaysAgo: 0 },
  { type: "fact", base: 1, createdDaysAgo: 400 },
  { type: "preference", base: 0.8, createdDaysAgo: 90 },
  { type: "event", base: 1, createdDaysAgo: 45, accessedDaysAgo: 10 },
  { type: "context", base: 0.5, createdDaysAgo: 20, reinforcedDaysAgo: 3 },
  { type: "context", base: 1, createdDaysAgo: 60, accessedDaysAgo: 30, reinforcedDaysAgo: 12.5 },
  { type: "event", base: 1, createdDaysAgo: 1000 },
  // Fresher than the database's clock (an import with a creation time ahead of it): no decay, no growth.
  { type: "preference", base: 0.9, createdDaysAgo: -2 },
  { type: "fact", base: 1, createdDaysAgo: 30, accessedDaysAgo: -1 }
]

const Row = Schema.Struct({
  type: MemoryType,
  decayFactor: Schema.Number,
  createdAt: Schema.Date,
  lastAccessedAt: Schema.NullOr(Schema.Date),
  reinforcedAt: Schema.NullOr(Schema.Date),
  now: Schema.Date,
  decayed: Schema.Number
})

layer(TestDatabase.layer)("the decay rule", (it) => {
  it.effect("gives the same factor in SQL (ordering, listing) as in the process (ranking, search)", () =>
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const start = Date.now()
      const at = (daysAgo: number | undefined) => (daysAgo === undefined ? null : new Date(start - daysAgo * DAY_MS))
      const [profile] = yield* sql<{ id: string }>`INSERT INTO profiles (external_id) VALUES ('decay') RETURNING id`
      for (const spec of specs) {
        yield* sql`
          INSERT INTO memories (profile_id, content, type, decay_factor, created_at, last_accessed_at, reinforced_at)
          VALUES (${profile!.id}, ${`a ${spec.type}`}, ${spec.type}, ${spec.base}, ${at(spec.createdDaysAgo)},
                  ${at(spec.accessedDaysAgo)}, ${at(spec.reinforcedDaysAgo)})`
      }
      const rows = yield* sql`
        SELECT type, decay_factor, created_at, last_accessed_at, reinforced_at, now() AS now,
               ${decayedFactor(sql, halfLives)} AS decayed
        FROM memories ORDER BY created_at`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(Row))))

      expect(rows).toHaveLength(specs.length)
      for (const row of rows) {
        const inProcess = decayFactorOf(
          {
            type: row.type,
            decayBase: row.decayFactor,
            createdAt: row.createdAt.getTime(),
            lastAccessedAt: row.lastAccessedAt?.getTime() ?? null,
            reinforcedAt: row.reinforcedAt?.getTime() ?? null
          },
          halfLives,
          row.now.getTime()
        )
        // The database's clock has microseconds, the process's milliseconds.
        expect(row.decayed).toBeCloseTo(inProcess, 8)
        expect(row.decayed).toBeLessThanOrEqual(row.decayFactor)
      }
    })
  )
})
