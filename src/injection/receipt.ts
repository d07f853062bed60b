import { Schema } from "effect"
import { InjectionPlacement } from "../domain/InjectionPlacement.ts"
import type { RetrievalMode, SemanticStatus } from "../retrieval/Retrieval.ts"

/** What was injected, reported to the caller in the `X-Service-Context` header. */
export type InjectionReceipt =
  | { readonly skipped: true }
  | {
      readonly skipped: false
      readonly summary: boolean
      readonly traits: ReadonlyArray<string>
      readonly memories: ReadonlyArray<string>
      /** The namespace's shared memories injected (the app's knowledge, not the user's). */
      readonly sharedMemories: ReadonlyArray<string>
      /** Plugins whose sections made it into the block. */
      readonly plugins: ReadonlyArray<string>
      readonly estimatedTokens: number
      /** How the memories were chosen, and why without vectors if so. */
      readonly retrieval: RetrievalMode
      readonly semantic: SemanticStatus
      /** Where the context went (a request through the proxy; not the preview). */
      readonly placement?: InjectionPlacement
      /** How many earlier turns' blocks went back where they were (`latest`). */
      readonly keptBlocks?: number
    }

/** The receipt of a block that was rendered. */
export type RenderedInjection = Extract<InjectionReceipt, { readonly skipped: false }>

/**
 * What was injected, as the caller reads it in the `X-Service-Context` header and the console's
 * preview shows it: the one wire shape of a rendered block's receipt.
 */
export const RenderedReceipt = Schema.Struct({
  profileId: Schema.String,
  summary: Schema.Boolean,
  /** Keys of the traits injected. */
  traits: Schema.Array(Schema.String),
  /** Ids of the user's memories injected. */
  memories: Schema.Array(Schema.String),
  /** Ids of the namespace's shared memories injected (what the app knows for all its users). */
  sharedMemories: Schema.Array(Schema.String),
  /** Plugins whose sections made it into the block. */
  plugins: Schema.Array(Schema.String),
  estimatedTokens: Schema.Int,
  /** How the memories were chosen: `all`, `fused` or `keyword`. */
  retrieval: Schema.String,
  /** Why the ranking went without the message's vector, when it did. */
  semantic: Schema.optionalKey(Schema.String),
  /** Where the context went: `latest` (at the conversation's tail) or `system` (with the operator's instructions). */
  placement: Schema.optionalKey(InjectionPlacement),
  /** How many earlier turns' blocks went back where they were, so the provider's cache serves them. */
  keptBlocks: Schema.optionalKey(Schema.Int)
})
export type RenderedReceipt = typeof RenderedReceipt.Type

/** The receipt of a block that was rendered, as the `X-Service-Context` header and the console's preview show it. */
export const renderedReceiptJson = (profileId: string, receipt: RenderedInjection): RenderedReceipt => ({
  profileId,
  summary: receipt.summary,
  traits: receipt.traits,
  memories: receipt.memories,
  sharedMemories: receipt.sharedMemories,
  plugins: receipt.plugins,
  estimatedTokens: receipt.estimatedTokens,
  retrieval: receipt.retrieval,
  ...(receipt.semantic === "used" || receipt.semantic === "off" ? {} : { semantic: receipt.semantic }),
  ...(receipt.placement === undefined ? {} : { placement: receipt.placement }),
  ...(receipt.keptBlocks === undefined ? {} : { keptBlocks: receipt.keptBlocks })
})

/** Any receipt as the `X-Service-Context` header shows it. */
export const receiptJson = (profileId: string | null, receipt: InjectionReceipt | "unavailable") =>
  receipt === "unavailable"
    ? { profileId, memory: "unavailable" }
    : receipt.skipped || profileId === null
      ? { profileId, skipped: true }
      : renderedReceiptJson(profileId, receipt)
