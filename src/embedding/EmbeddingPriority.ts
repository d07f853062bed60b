import { Context } from "effect"

/**
 * Who is waiting for an embedding: a request (`query`, first in line) or background work
 * (`document`). Read by models that schedule their own work, such as the local thread pool.
 */
export const EmbeddingPriority = Context.Reference<"query" | "document">("gateway/embedding/EmbeddingPriority", {
  defaultValue: () => "document"
})
