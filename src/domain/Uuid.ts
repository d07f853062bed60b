import { Schema } from "effect"

/**
 * The one test for "is this a UUID": the canonical 8-4-4-4-12 hexadecimal form, in upper or lower case.
 * Text that passes can be cast to PostgreSQL's `uuid` without an error.
 */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const isUuid = (text: string): boolean => UUID_PATTERN.test(text)

/** A UUID in a request (a query parameter, a field): refused with a 400 before any query when it is not one. */
export const UuidText = Schema.String.check(Schema.isPattern(UUID_PATTERN, { expected: "a UUID" }))
