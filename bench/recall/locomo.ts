/**
 * LoCoMo (Maharana et al., ACL 2024), read from `../shared/datasets/locomo` when it is there (never
 * copied into the repository; its SOURCE.md describes the format). The protocol of our benchmark:
 * every dialog turn is one memory, `"<speaker>: <text>"` with a shared photo's caption appended, that
 * happened at its session's date; questions of categories 1–4 (5 has no answer in the conversation),
 * each asked as of the end of the conversation; an answer is any of the turns its authors name as
 * evidence. Conversations 26, 30, 41, 42 and 43 are for fitting, 44, 47, 48, 49 and 50 held out.
 */
import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { Schema } from "effect"
import { root } from "../processes.ts"

export const LOCOMO_DIR = join(root, "..", "shared", "datasets", "locomo")
export const LOCOMO_TUNE = ["26", "30", "41", "42", "43"] as const
export const LOCOMO_HELDOUT = ["44", "47", "48", "49", "50"] as const

export const LOCOMO_CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop" } as const
export type LocomoCategory = keyof typeof LOCOMO_CATEGORIES

const Turn = Schema.Struct({
  speaker: Schema.String,
  dia_id: Schema.String,
  text: Schema.String,
  blip_caption: Schema.optionalKey(Schema.String)
})

const QuestionRecord = Schema.Struct({
  question: Schema.String,
  evidence: Schema.Array(Schema.String),
  category: Schema.Number
})

const ConversationFile = Schema.Struct({
  qa: Schema.Array(QuestionRecord)
})

export interface LocomoMemory {
  /** The turn's dialog id, "D3:7". */
  readonly key: string
  readonly content: string
  /** The session's date and time (ms). */
  readonly occurredAt: number
  /** The session's time plus a second per turn: the dialog's order. */
  readonly createdAt: number
}

export interface LocomoQuestion {
  readonly id: string
  readonly question: string
  readonly category: LocomoCategory
  /** Dialog ids of the evidence turns (malformed ones repaired, unknown ones dropped). */
  readonly evidence: ReadonlyArray<string>
}

export interface LocomoConversation {
  readonly id: string
  readonly split: "tune" | "heldout"
  readonly memories: ReadonlyArray<LocomoMemory>
  readonly questions: ReadonlyArray<LocomoQuestion>
  /** When the questions are asked: the end of the last session. */
  readonly now: number
  /** Questions left out because none of their evidence ids names a turn. */
  readonly unanswerable: number
}

const MONTHS = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december"
]

/** "1:56 pm on 8 May, 2023" → ms (read as UTC). */
export const sessionTime = (text: string): number => {
  const m = /^(\d{1,2}):(\d{2})\s*(am|pm) on (\d{1,2}) (\w+),? (\d{4})$/i.exec(text.trim())
  if (m === null) throw new Error(`unreadable LoCoMo session date: ${text}`)
  const month = MONTHS.indexOf(m[5]!.toLowerCase())
  if (month === -1) throw new Error(`unreadable LoCoMo month: ${text}`)
  const hour = (Number(m[1]) % 12) + (m[3]!.toLowerCase() === "pm" ? 12 : 0)
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]))
}

/** "D30:05" → "D30:5", "D:11:26" → "D11:26". */
const repairEvidence = (id: string): string => {
  const m = /^D:?(\d+):0*(\d+)$/.exec(id.trim())
  return m === null ? id.trim() : `D${m[1]}:${m[2]}`
}

export const locomoAvailable = (): boolean => existsSync(join(LOCOMO_DIR, "26.json"))

export const loadLocomoConversation = async (id: string): Promise<LocomoConversation> => {
  const raw = JSON.parse(await readFile(join(LOCOMO_DIR, `${id}.json`), "utf8")) as Record<string, unknown>
  const file = Schema.decodeUnknownSync(ConversationFile)(raw)
  const memories: Array<LocomoMemory> = []
  let now = 0
  for (let session = 1; raw[`session_${session}`] !== undefined; session++) {
    const at = sessionTime(Schema.decodeUnknownSync(Schema.String)(raw[`session_${session}_date_time`]))
    const turns = Schema.decodeUnknownSync(Schema.Array(Turn))(raw[`session_${session}`])
    turns.forEach((turn, i) => {
      const caption = turn.blip_caption === undefined ? "" : ` (shares ${turn.blip_caption})`
      memories.push({
        key: turn.dia_id,
        content: `${turn.speaker}: ${turn.text}${caption}`,
        occurredAt: at,
        createdAt: at + i * 1000
      })
    })
    now = Math.max(now, at + turns.length * 1000)
  }
  const keys = new Set(memories.map((memory) => memory.key))
  const questions: Array<LocomoQuestion> = []
  let unanswerable = 0
  file.qa.forEach((qa, i) => {
    if (!(qa.category in LOCOMO_CATEGORIES)) return
    const evidence = qa.evidence
      .flatMap((e) => e.trim().split(/[;,\s]+/))
      .map(repairEvidence)
      .filter((e) => keys.has(e))
    if (evidence.length === 0) {
      unanswerable++
      return
    }
    questions.push({
      id: `locomo${id}-q${i}`,
      question: qa.question,
      category: qa.category as LocomoCategory,
      evidence
    })
  })
  return {
    id,
    split: (LOCOMO_TUNE as ReadonlyArray<string>).includes(id) ? "tune" : "heldout",
    memories,
    questions,
    now: now + 60_000,
    unanswerable
  }
}

export const loadLocomo = async (ids: ReadonlyArray<string> = [...LOCOMO_TUNE, ...LOCOMO_HELDOUT]) =>
  Promise.all(ids.map(loadLocomoConversation))
