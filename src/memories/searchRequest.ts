import { Schema } from "effect"

/** The most memories one search returns, and how many when not told. */
export const MAX_SEARCH_RESULTS = 100
export const DEFAULT_SEARCH_RESULTS = 10

/** A search as callers write it, through the API and MCP alike. */
export const SearchQuery = Schema.String.check(Schema.isBetweenLength(1, 10_000))
export const SearchLimit = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_SEARCH_RESULTS }))
