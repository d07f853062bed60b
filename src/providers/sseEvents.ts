const LF = 10
const CR = 13

/**
 * Held at most: a provider that never ends its event is relayed by pieces of this size rather than
 * held whole (the SSE parser's own limit).
 */
const MAX_HELD = 10 * 1024 * 1024

/** The whole events some SSE text completed, each as sent; `tail`: it began with their predecessor's last LF. */
export interface SplitEvents {
  /**
   * The text began with the LF of a CRLF whose CR ended the last event given: that event's, not the
   * next's (it is in neither `events`).
   */
  readonly tail: boolean
  readonly events: ReadonlyArray<string>
}

/**
 * Cuts SSE text, as it arrives, into whole events: each one's text as sent, with the blank line that
 * ends it (`\n\n`, `\r\n\r\n`, `\r\r`), so that it can be relayed, changed or dropped as one. What
 * completes no event is held for the next text. An event whose blank line ends on a CR that ends the
 * text is given at once (a stream framed with CRs alone would wait a piece for every event); the LF
 * that may follow it is then the next text's `tail`.
 */
export const makeEventSplitter = () => {
  let held = ""
  // Nothing came yet, or the last character ended a line.
  let atLineStart = true
  // The last character was a CR: an LF now ends the same line.
  let afterCr = false
  // The last event given ended on a CR that ended its text.
  let endedOnCr = false
  return (text: string): SplitEvents => {
    const events: Array<string> = []
    let start = 0
    const tail = endedOnCr && text.length > 0 && text.charCodeAt(0) === LF
    if (text.length > 0) endedOnCr = false
    if (tail) {
      afterCr = false
      start = 1
    }
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code === LF && afterCr) {
        afterCr = false
        continue
      }
      afterCr = code === CR
      if (code !== CR && code !== LF) {
        atLineStart = false
        continue
      }
      if (!atLineStart) {
        atLineStart = true
        continue
      }
      // A blank line: the event ends with it (with its CRLF's LF, when that has come).
      if (code === CR && i + 1 === text.length) endedOnCr = true
      else if (code === CR && text.charCodeAt(i + 1) === LF) {
        i++
        afterCr = false
      }
      events.push(held + text.slice(start, i + 1))
      held = ""
      start = i + 1
    }
    held += text.slice(start)
    if (held.length > MAX_HELD) {
      events.push(held)
      held = ""
    }
    return { tail, events }
  }
}
