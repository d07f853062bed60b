import { type Effect, type Layer, Predicate, Result, Schema } from "effect"
import { type ClientFacing, clientError, errorStatusOr } from "../domain/ClientError.ts"
import type { MemoryType } from "../domain/Memory.ts"
import type { Profile } from "../domain/Profile.ts"
import { firstIssue } from "../domain/schemaIssues.ts"
import type { Trait } from "../domain/Trait.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"

/**
 * The plugin API: a plugin is a value with a name and optional hooks, each an Effect. Hooks run
 * in the order plugins are declared, each within a time budget; a hook that fails or runs late is
 * logged, counted and skipped unless its plugin is `required`. To refuse a request on purpose
 * (e.g. a bad signature), fail with `PluginRejection`: that always reaches the client.
 */

/** A deliberate refusal, returned to the client as an OpenAI-shaped error with this status and code. */
export class PluginRejection
  extends Schema.TaggedError<PluginRejection>()("PluginRejection", {
    status: Schema.Int,
    code: Schema.String,
    message: Schema.String
  })
  implements ClientFacing
{
  /** A status outside 400–599 would not read as a refusal: it becomes 400. */
  get clientError() {
    return clientError(errorStatusOr(this.status, 400), this.code, this.message)
  }
}

/** A trait value type: how values are checked (and normalised) and how they read in the injected context. */
export interface ValueType {
  readonly name: string
  /** The normalised value, or why it does not fit. `definition` is undefined for an undeclared key. */
  readonly validate: (value: unknown, definition: TraitDefinition | undefined) => Result.Result<unknown, string>
  readonly render: (value: unknown) => string
  /** For undeclared keys: whether a first value has this type (built-in types only). */
  readonly infers?: (value: unknown) => boolean
}

/** A value type defined by a Schema: decoding is validation, the decoded value is what is stored. */
export const schemaValueType = <A>(
  name: string,
  schema: Schema.Codec<A, unknown>,
  render: (value: A) => string = (value) => (Predicate.isString(value) ? value : JSON.stringify(value))
): ValueType => {
  const decode = Schema.decodeUnknownResult(schema)
  return {
    name,
    validate: (value) => Result.mapError(decode(value), (error) => firstIssue(error).message),
    render: (value) => render(value as A)
  }
}

/** One line of an injected section; `id` is what the `X-Service-Context` receipt reports. */
export interface ContextItem {
  readonly id: string
  readonly text: string
}

/**
 * A named part of the injected block. Sections are rendered by descending priority until the
 * token budget is spent; an item that does not fit whole is left out.
 */
export interface ContextSection {
  readonly title: string
  readonly items: ReadonlyArray<ContextItem>
  readonly priority: number
  /** Render a single item on the title line (`Summary: …`) instead of as a list. */
  readonly inline?: boolean
  /** Largest share of the budget this section may take (0–1); cut to fit instead of dropped. */
  readonly maxShare?: number
}

/** A section of the block with the plugin that gave it. */
export interface PluginSection extends ContextSection {
  readonly plugin: string
}

/** What made it into the block: per section, the ids of the items that fitted. */
export interface IncludedSection {
  readonly plugin: string
  readonly title: string
  readonly ids: ReadonlyArray<string>
}

export interface RankedMemory {
  readonly id: string
  readonly content: string
  readonly type: MemoryType
  readonly score: number
  /** When the remembered thing happened (`YYYY-MM-DD`), if known. */
  readonly occurredOn?: string | undefined
  /**
   * When it was remembered (`YYYY-MM-DD`), given when another injected memory is about the same
   * subject: one may be a change of the other, and the dates say which is current.
   */
  readonly rememberedOn?: string | undefined
}

export interface ResolveUserContext {
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The request body, in the format of the API the client called (chat completions or Anthropic Messages). */
  readonly body: Readonly<Record<string, unknown>>
  /** The user id found by the gateway (header, or the body's user fields) or by earlier plugins. */
  readonly userId: string | undefined
}

export interface InjectContext {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  readonly memories: ReadonlyArray<RankedMemory>
  /**
   * What the app knows for all its users (its namespace's shared memories) that is relevant to the
   * message, best first: none when nothing is, or the request leaves them out (`service.sharedMemories`).
   */
  readonly sharedMemories: ReadonlyArray<RankedMemory>
  /** The trait schema in effect for this request. */
  readonly definitions: ReadonlyMap<string, TraitDefinition>
  readonly valueTypes: ReadonlyMap<string, ValueType>
  readonly latestUserText: string
}

export interface ForwardContext {
  /** `undefined` while the database is unavailable: the request then goes without memory. */
  readonly profile: Profile | undefined
  /** The user id the request was resolved to. */
  readonly userId: string
  /**
   * The API whose format `body` is in: the one the client called (OpenAI Chat Completions or
   * Responses, Anthropic Messages), or `messages` when an OpenAI request goes to Anthropic (it was
   * translated, once, before this hook).
   */
  readonly api: "chat.completions" | "responses" | "messages"
  /** The request about to be sent, context already injected. */
  readonly body: Readonly<Record<string, unknown>>
}

export interface RecordedMessage {
  readonly role: string
  readonly content: string
  readonly toolCalls: unknown
  readonly toolCallId: string | null
}

export interface TurnContext {
  readonly profile: Profile
  readonly requestId: string
  readonly model: string
  /** The new input messages and the assistant's reply, as recorded. */
  readonly messages: ReadonlyArray<RecordedMessage>
}

export interface ExtractContext {
  readonly profileId: string
  /** The turn's messages, or a single user message for ingested text. */
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: string }>
  readonly traits: ReadonlyArray<Trait>
  /** The trait schema in effect for the job. */
  readonly definitions: ReadonlyMap<string, TraitDefinition>
  /** Traits whose `behaviour` names this plugin: it, not the model, extracts them. */
  readonly assigned: ReadonlyArray<TraitDefinition>
}

export interface ExtractContribution {
  readonly traits?: ReadonlyArray<{ readonly key: string; readonly value: unknown; readonly confidence: number }>
  readonly memories?: ReadonlyArray<{
    readonly content: string
    readonly type: MemoryType
    readonly importance: number
  }>
}

export interface PluginHooks<R> {
  /** Derive or check the user id; return `undefined` to keep it. */
  readonly resolveUser?: (
    context: ResolveUserContext
  ) => Effect.Effect<string | undefined, PluginRejection | unknown, R>
  /** Contribute sections to the injected context. */
  readonly inject?: (context: InjectContext) => Effect.Effect<ReadonlyArray<ContextSection>, unknown, R>
  /** Rewrite the request before it goes to the provider. */
  readonly beforeForward?: (context: ForwardContext) => Effect.Effect<Readonly<Record<string, unknown>>, unknown, R>
  /** Rewrite what is stored (and later sent to extraction): turn messages or ingested text. */
  readonly beforeRecord?: (
    messages: ReadonlyArray<RecordedMessage>
  ) => Effect.Effect<ReadonlyArray<RecordedMessage>, unknown, R>
  /** Observe a finished, recorded turn (runs in the background). */
  readonly afterResponse?: (context: TurnContext) => Effect.Effect<void, unknown, R>
  /** Contribute traits and memories for a turn without a model call (runs in the extraction worker). */
  readonly extract?: (context: ExtractContext) => Effect.Effect<ExtractContribution, unknown, R>
}

export interface Plugin<R = never> {
  readonly name: string
  /** A failing or late hook of a required plugin fails the request (5xx naming the plugin) instead of being skipped. */
  readonly required?: boolean
  /** Time budget of each hook call, overriding the host's default. */
  readonly timeoutMs?: number
  /** Services the hooks need, built once at start. */
  readonly layer?: Layer.Layer<R, unknown>
  readonly hooks?: PluginHooks<R>
  /** New trait value types. */
  readonly valueTypes?: ReadonlyArray<ValueType>
}

/**
 * Any plugin, whatever services it needs: the form the host keeps them in. (A `Plugin<R>` is
 * assignable to it: the host builds the plugin's layer and provides it to the plugin's hooks.)
 */
export type AnyPlugin = Omit<Plugin<unknown>, "layer"> & { readonly layer?: Layer.Layer<never, unknown> }

/** The plugin constructor (names are checked when the plugin is loaded). */
export const definePlugin = <R = never>(plugin: Plugin<R>): Plugin<R> => plugin

export const PLUGIN_NAME = /^[a-z][a-z0-9-]{0,63}$/

/** What a module must export (as `default` or `plugin`) to be loaded from `PLUGINS`. */
export const isPlugin = (value: unknown): value is AnyPlugin =>
  Predicate.isObject(value) &&
  Predicate.isString(value["name"]) &&
  (value["hooks"] === undefined || Predicate.isObject(value["hooks"])) &&
  (value["valueTypes"] === undefined || Array.isArray(value["valueTypes"]))
