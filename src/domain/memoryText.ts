/**
 * The text a memory is found by, embedded and keyword-indexed: its content, then its cues
 * (the situations in which it matters). Only the content is ever injected.
 */
export const memoryText = (content: string, cues: ReadonlyArray<string>): string =>
  cues.length === 0 ? content : `${content} (${cues.join(", ")})`
