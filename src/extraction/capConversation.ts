import type { ConversationLine } from "./ExtractionRepo.ts"

const CUT_MARK = "…"

const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff

/** The last `characters` characters of a text, marked as cut, without splitting a surrogate pair. */
const tailOf = (text: string, characters: number): string => {
  let start = text.length - (characters - CUT_MARK.length)
  if (isLowSurrogate(text.charCodeAt(start))) start++
  return CUT_MARK + text.slice(start)
}

/**
 * At most `maxCharacters` of a turn's text for the extraction model, keeping the newest: whole lines
 * from the last one back, then the end of the line that crosses the limit (marked with "…"); older
 * lines are left out. The newest text is what the turn is about — the user's last words and the
 * reply — and a message of megabytes must not be sent whole to the model.
 */
export const capConversation = (
  lines: ReadonlyArray<ConversationLine>,
  maxCharacters: number
): ReadonlyArray<ConversationLine> => {
  const kept: Array<ConversationLine> = []
  let remaining = maxCharacters
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!
    if (line.content.length <= remaining) {
      kept.push(line)
      remaining -= line.content.length
      continue
    }
    if (remaining > CUT_MARK.length) kept.push({ ...line, content: tailOf(line.content, remaining) })
    break
  }
  return kept.reverse()
}
