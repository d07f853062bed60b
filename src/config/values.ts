import { Config, Option, Redacted, Schema } from "effect"

/**
 * The value kinds the configuration sections are written in, each once. A bad value fails the start
 * with a message naming the variable (and saying what was expected); an unset one takes the default.
 */

/** A section: its fields' configs read together, the result read-only. */
export const section = <const Fields extends Record<string, Config.Config<unknown>>>(fields: Fields) =>
  // `Config.all` gives the same record, writable; its conditional type does not resolve for a generic `Fields`.
  Config.all(fields) as Config.Config<{ readonly [K in keyof Fields]: Config.Success<Fields[K]> }>

const atLeast = (minimum: number) => Schema.Int.check(Schema.isGreaterThanOrEqualTo(minimum))

export const PositiveInt = atLeast(1)

export const positiveInt = (name: string, fallback: number) =>
  Config.schema(PositiveInt, name).pipe(Config.withDefault(fallback))

export const nonNegativeInt = (name: string, fallback: number) =>
  Config.schema(atLeast(0), name).pipe(Config.withDefault(fallback))

export interface Range {
  readonly minimum: number
  readonly maximum: number
}

export const intBetween = (name: string, range: Range, fallback: number) =>
  Config.schema(Schema.Int.check(Schema.isBetween(range)), name).pipe(Config.withDefault(fallback))

/** A finite number within the range (no default: wrap it in `Config.option` or `Config.withDefault`). */
export const numberBetween = (name: string, range: Range) =>
  Config.schema(Schema.Finite.check(Schema.isBetween(range)), name)

export const nonNegativeNumber = (name: string, fallback: number) =>
  Config.schema(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)), name).pipe(Config.withDefault(fallback))

export const positiveNumber = (name: string, fallback: number) =>
  Config.schema(Schema.Finite.check(Schema.isGreaterThan(0)), name).pipe(Config.withDefault(fallback))

/** `true`/`false` and their usual spellings (`yes`, `on`, `1`…). */
export const flag = (name: string, fallback: boolean) => Config.Boolean(name).pipe(Config.withDefault(fallback))

export const HttpUrl = Schema.String.check(
  Schema.makeFilter((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
    expected: "an http:// or https:// URL"
  })
)

/** An http(s) URL without its trailing slashes, so paths can be appended to it. */
export const url = (name: string) => Config.schema(HttpUrl, name).pipe(Config.map((u) => u.replace(/\/+$/, "")))

/** An unset or empty variable is `None`: compose files often pass `VAR=` for "not set". */
export const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))

export const optionalSecret = (name: string) =>
  optionalString(name).pipe(Config.map(Option.map((value) => Redacted.make(value.trim()))))

/** An unset or empty variable is `None`, anything else must be an http(s) URL (kept as written, trimmed). */
export const optionalUrl = (name: string) =>
  optionalString(name).pipe(
    Config.flatMap(
      Option.match({
        onNone: () => Config.succeed(Option.none<string>()),
        onSome: () => Config.schema(HttpUrl, name).pipe(Config.map((u) => Option.some(u.trim())))
      })
    )
  )

const entriesOf = (list: string): ReadonlyArray<string> =>
  list
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")

/**
 * A comma-separated list, its items trimmed and blank ones ignored; unset or empty: no items. With
 * `item`, a list holding anything else fails with `item.expected` (the whole list's description).
 */
export const commaList = (
  name: string,
  item?: { readonly valid: (entry: string) => boolean; readonly expected: string }
): Config.Config<ReadonlyArray<string>> =>
  Config.schema(
    item === undefined
      ? Schema.String
      : Schema.String.check(
          Schema.makeFilter((list) => entriesOf(list).every(item.valid), { expected: item.expected })
        ),
    name
  ).pipe(Config.withDefault(""), Config.map(entriesOf))

/** A comma-separated list of secrets, e.g. keys during a rotation. */
export const secretList = (name: string) =>
  commaList(name).pipe(Config.map((items) => items.map((item) => Redacted.make(item))))
