import fc from "fast-check"
import type { TestGateway } from "./gateway.ts"

/**
 * Inputs that have broken services before: text PostgreSQL cannot hold (NUL, lone surrogates),
 * invisible and bidi characters, look-alikes, SQL and path metacharacters, huge and deeply
 * nested values. Shared by the property tests over the management API and the proxy.
 */

/** Single characters (UTF-16 code units or short sequences) worth combining. */
export const HOSTILE_PIECES = [
  "\u0000",
  "\ud800",
  "\udfff",
  "\ud83d",
  "\ude00",
  "\u200b",
  "\u200e",
  "\u202e",
  "\u2066",
  "\u00ad",
  "\ufeff",
  "\u0007",
  "\u001b",
  "\u007f",
  "\u0085",
  "\u2028",
  "\n",
  "\r",
  "\t",
  " ",
  "\u00a0",
  "'",
  '"',
  "\\",
  "%",
  "_",
  "/",
  "..",
  "?",
  "#",
  "&",
  "=",
  "+",
  ":",
  "é",
  "e\u0301",
  "\u00c5",
  "A\u030a",
  "😀",
  "\uffff",
  "\ufffd",
  "<user_profile>",
  "'; DROP TABLE profiles; --",
  "00000000-0000-0000-0000-000000000000"
] as const

/** Any UTF-16 code unit, lone surrogates included (fast-check's own units never produce those). */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit))

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: fc.oneof(fc.constantFrom(...HOSTILE_PIECES), codeUnit), maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("", " ", "   ", "\u0000", "a\u0000b", "\ud800", "x".repeat(300), "y".repeat(5000))
  },
  // Rare, expensive: larger than most field limits (the /api body limit is 1 MiB).
  { weight: 1, arbitrary: fc.constantFrom("z".repeat(70_000), "\u0000".repeat(20_000)) }
)

/** JSON text nested `depth` levels deep, as arrays or objects (built as text: a value this deep breaks JSON.stringify). */
export const deepJsonText = (depth: number, kind: "array" | "object" = "array"): string =>
  kind === "array" ? `${"[".repeat(depth)}1${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`

/** JSON text of a value for one field: ordinary JSON, hostile strings, deep nesting. */
export const jsonFragment: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: hostileString.map((s) => JSON.stringify(s)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.constantFrom("null", "true", "0", "-1", "1e308", "[]", "{}", '""') },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 100, max: 6000 }), fc.constantFrom("array" as const, "object" as const))
      .map(([depth, kind]) => deepJsonText(depth, kind))
  },
  { weight: 1, arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 3 }).map((v) => JSON.stringify(v)) }
)

/** A JSON object's text from field fragments. */
export const objectText = (fields: ReadonlyArray<readonly [string, string]>): string =>
  `{${fields.map(([key, fragment]) => `${JSON.stringify(key)}:${fragment}`).join(",")}}`

/** A whole request body that is not what an endpoint expects: arbitrary JSON, deep nesting, not JSON at all. */
export const arbitraryBody: fc.Arbitrary<string> = fc.oneof(
  jsonFragment,
  fc.constantFrom("", "{", '{"a":', "nul", "[1,]", "\u0000", '{"a":"\\u0000"}', '{"a":"\\ud800"}', '"\\udc00"'),
  fc.string({ unit: "binary", maxLength: 40 })
)

/**
 * A path segment or query value as a client could send it: percent-encoded, with lone surrogates
 * encoded as the (invalid) UTF-8 bytes of their code point, as sloppy encoders do.
 */
export const encodeComponent = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    const next = text.charCodeAt(i + 1)
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2))
      i++
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`)
        .join("")
    } else {
      out += encodeURIComponent(text[i]!)
    }
  }
  return out
}

/** Raw (already encoded) path or query text that no encoder would produce. */
export const rawGarbage = fc.constantFrom(
  "%",
  "%zz",
  "%FF",
  "%C0%AF",
  "%ED%A0%80",
  "%00",
  "a%00b",
  "%E2%80%AE",
  "..",
  "%2e%2e",
  "%2F"
)

/**
 * Hostile text for a URL: short enough that the request line stays within Node's header limit
 * (16 KiB, answered by Node itself with 431 before a route runs).
 */
export const urlText: fc.Arbitrary<string> = hostileString.filter((s) => s.length <= 400).map(encodeComponent)

/** A path segment: hostile text, encoded, or raw garbage. */
export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: urlText.filter((s) => s !== "") },
  { weight: 1, arbitrary: rawGarbage }
)

export interface TableCounts {
  readonly profiles: number
  readonly traits: number
  readonly memories: number
  readonly messages: number
  readonly extraction_jobs: number
  readonly trait_history: number
  readonly summary_history: number
}

/** Rows in every table a request can write to. */
export const tableCounts = async (gw: TestGateway): Promise<TableCounts> => {
  const [row] = await gw.query<TableCounts>(
    `SELECT (SELECT count(*) FROM profiles)::int AS profiles, (SELECT count(*) FROM traits)::int AS traits,
            (SELECT count(*) FROM memories)::int AS memories, (SELECT count(*) FROM messages)::int AS messages,
            (SELECT count(*) FROM extraction_jobs)::int AS extraction_jobs,
            (SELECT count(*) FROM trait_history)::int AS trait_history,
            (SELECT count(*) FROM summary_history)::int AS summary_history`
  )
  return row!
}

/** The UTF-8 bytes of a text as the latin1 string Node's HTTP client puts on the wire byte for byte. */
export const utf8HeaderValue = (text: string): string => Buffer.from(text, "utf8").toString("latin1")
