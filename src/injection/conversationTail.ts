import { createHash, hash } from "node:crypto"

const HASH_SEED = "pmg-tail\u0000"

/**
 * Where a request's context goes when it keeps the provider's prompt cache (`INJECTION_PLACEMENT=latest`).
 *
 * A provider serves from its cache the longest prefix of a request that it has seen before, and a chat
 * app resends its whole conversation every turn: everything but the new message is such a prefix. So
 * the gateway leaves the app's items as they are and in their order, and puts the turn's block after
 * the latest item the model did not write (the new user message, or a tool's result) — the tail. The
 * next turn's request starts with this one's items; to keep the block of this turn cached too, the
 * gateway puts it back where it was (the "kept" blocks), found by the hash of the items before it.
 *
 * This module is pure: it finds the positions and hashes and lays the blocks out. What was kept is
 * remembered by `ContextBlocksRepo`; each API's item shapes are its adapter's (`ConversationShape`).
 */

/** How one API's request holds its conversation, as the placement needs it. */
export interface ConversationShape {
  /** The conversation's items in order (chat and Anthropic: `messages`; Responses: `input` as items). */
  readonly items: (body: Readonly<Record<string, unknown>>) => ReadonlyArray<unknown>
  /** The body with these items in their place. */
  readonly withItems: (
    body: Readonly<Record<string, unknown>>,
    items: ReadonlyArray<unknown>
  ) => Readonly<Record<string, unknown>>
  /** The item that carries a block of the gateway's text. */
  readonly blockItem: (text: string) => unknown
  /** Whether the model wrote this item (an answer, a tool call): a turn's tail goes before such items. */
  readonly isAnswer: (item: unknown) => boolean
}

/** A conversation's items, read for placement. */
export interface TailLayout {
  /** Where this turn's block goes: after the latest item the model did not write. */
  readonly point: number
  /** The hash of the items before each position (`hashes[i]`: of items 0 … i−1), hex; read at `point` and `earlier` only. */
  readonly hashes: ReadonlyArray<string | undefined>
  /**
   * Positions where an earlier turn's tail went: after an item the model did not write and right before
   * one it did (the answer to that turn), oldest first.
   */
  readonly earlier: ReadonlyArray<number>
}

/**
 * An item as its hash reads it: its JSON with the keys of every object in order, so an item read
 * back from the database (which orders keys its own way) hashes as it did when the client sent it.
 * The provider renders an item the same whatever the order of its keys.
 */
const canonical = (item: unknown): string => {
  if (item === null || typeof item !== "object") return JSON.stringify(item) ?? "null"
  if (Array.isArray(item)) {
    let text = "["
    for (let i = 0; i < item.length; i++) text += `${i === 0 ? "" : ","}${canonical(item[i])}`
    return `${text}]`
  }
  const record = item as Record<string, unknown>
  let text = "{"
  for (const key of Object.keys(record).sort()) {
    const value = record[key]
    if (value === undefined) continue
    text += `${text === "{" ? "" : ","}${JSON.stringify(key)}:${canonical(value)}`
  }
  return `${text}}`
}

/** The positions and hashes of a conversation, for the tail and for the blocks of earlier turns. */
export const layoutOf = (items: ReadonlyArray<unknown>, isAnswer: (item: unknown) => boolean): TailLayout => {
  let point = items.length
  while (point > 0 && isAnswer(items[point - 1])) point--
  const earlier: Array<number> = []
  for (let position = 1; position < point; position++) {
    if (!isAnswer(items[position - 1]) && isAnswer(items[position])) earlier.push(position)
  }
  const hashes: Array<string | undefined> = new Array(point + 1)
  if (earlier.length === 0) {
    // A conversation's first request: one hash, of everything before the tail.
    let text = HASH_SEED
    for (let position = 0; position < point; position++) text += `${canonical(items[position])}\u0000`
    hashes[point] = hash("sha256", text)
    return { point, hashes, earlier }
  }
  // One running hash over the items, read out where a position is wanted.
  const wanted = new Set([...earlier, point])
  const running = createHash("sha256").update(HASH_SEED)
  for (let position = 0; position <= point; position++) {
    if (wanted.has(position)) hashes[position] = running.copy().digest("hex")
    if (position < point) running.update(`${canonical(items[position])}\u0000`)
  }
  return { point, hashes, earlier }
}

/**
 * The items with the earlier turns' blocks back where they were and this turn's tail (if any) at
 * `point`: the app's own items untouched and in their order.
 */
export const withTail = (
  items: ReadonlyArray<unknown>,
  kept: ReadonlyMap<number, string>,
  point: number,
  tail: string | undefined,
  blockItem: (text: string) => unknown
): ReadonlyArray<unknown> => {
  const out: Array<unknown> = []
  for (let position = 0; position <= items.length; position++) {
    const earlier = kept.get(position)
    if (earlier !== undefined && earlier !== "" && position < point) out.push(blockItem(earlier))
    if (position === point && tail !== undefined) out.push(blockItem(tail))
    if (position < items.length) out.push(items[position])
  }
  return out
}
