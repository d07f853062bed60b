/** The labelled retrieval set in bench/recall/data: profiles of memories and questions with their answers. */
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { Schema } from "effect"

export const Category = Schema.Literals(["paraphrase", "keyword", "changed", "time", "none"])
export type Category = typeof Category.Type

export const DatasetMemory = Schema.Struct({
  key: Schema.String,
  content: Schema.String,
  type: Schema.Literals(["fact", "preference", "event", "context"]),
  importance: Schema.Number,
  createdDaysAgo: Schema.Number,
  occurredDaysAgo: Schema.optionalKey(Schema.Number),
  occurredAt: Schema.optionalKey(Schema.String),
  supersedes: Schema.optionalKey(Schema.Array(Schema.String))
})
export type DatasetMemory = typeof DatasetMemory.Type

export const Question = Schema.Struct({
  id: Schema.String,
  category: Category,
  question: Schema.String,
  answers: Schema.Array(Schema.String),
  stale: Schema.optionalKey(Schema.Array(Schema.String)),
  split: Schema.Literals(["tune", "heldout"])
})
export type Question = typeof Question.Type

export const DatasetProfile = Schema.Struct({
  profile: Schema.String,
  description: Schema.String,
  memories: Schema.Array(DatasetMemory),
  questions: Schema.Array(Question)
})
export type DatasetProfile = typeof DatasetProfile.Type

const dataDir = new URL("./data/", import.meta.url)

export const loadDataset = async (): Promise<ReadonlyArray<DatasetProfile>> => {
  const files = (await readdir(dataDir)).filter((file) => file.endsWith(".json")).sort()
  return Promise.all(
    files.map(async (file) =>
      Schema.decodeUnknownSync(DatasetProfile)(JSON.parse(await readFile(join(dataDir.pathname, file), "utf8")))
    )
  )
}
