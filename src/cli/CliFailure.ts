import { Effect, FileSystem, Schema } from "effect"

/** A command could not do what it was asked, for a reason it states to the user (exit 1). */
export class CliFailure extends Schema.TaggedError<CliFailure>()("CliFailure", { message: Schema.String }) {}

/** A failure already logged where it happened (the gateway logs its own, in its log format): nothing to add. */
export class AlreadyReported extends Schema.TaggedError<AlreadyReported>()("AlreadyReported", {}) {}

/** A JSON file's content, decoded with `schema`; what is wrong with it names the file. */
export const readJsonFile = <S extends Schema.Top>(path: string, schema: S) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs
      .readFileString(path)
      .pipe(Effect.mapError((error) => new CliFailure({ message: `cannot read ${path}: ${error.message}` })))
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => new CliFailure({ message: `${path} is not valid JSON` })
    })
    return yield* Schema.decodeUnknownEffect(schema)(json).pipe(
      Effect.mapError(
        (error) => new CliFailure({ message: `${path} does not hold what was expected: ${error.message}` })
      )
    )
  })
