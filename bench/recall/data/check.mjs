#!/usr/bin/env node
// Validates the recall benchmark profile files in this folder (plain JS, no dependencies).
//
//   node bench/recall/data/check.mjs [--now=YYYY-MM-DD] [--verbose]
//
// --now is only used for informational warnings that relate `occurredAt` dates to
// `createdDaysAgo` / relative periods; it defaults to today's date.
// Exits with code 1 when any error is found. Warnings never fail the run.

import fs from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"

const DIR = path.dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
const VERBOSE = args.includes("--verbose")
const nowArg = args.find((a) => a.startsWith("--now="))
const NOW = nowArg
  ? new Date(`${nowArg.slice(6)}T00:00:00Z`)
  : new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`)

const TYPES = new Set(["fact", "preference", "event", "context"])
const CATEGORIES = ["paraphrase", "keyword", "changed", "time", "none"]
const TARGET = { paraphrase: 55, keyword: 45, changed: 30, time: 30, none: 25 }
const MIN_MEMORIES = 320
const MIN_TOTAL_QUESTIONS = 180
const OLDEST_N = 100

// A common English stop-word list (NLTK-like, plus contractions and a few modal/filler words).
const STOP = new Set(
  `
a about above after again against all am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn
it its itself just let lets ll me might mightn more most must mustn my myself no nor not now of off on once only
or other our ours ourselves out over own re same shall shan she should shouldn so some such than that the
their theirs them themselves then there these they this those through to too under until up ve very was wasn
we were weren what when where which while who whom why will with won would wouldn you your yours yourself
yourselves also yet ever may user users
`
    .trim()
    .split(/\s+/)
)

const SUFFIXES = ["ing", "es", "ed", "ly", "er", "s"]

/** Candidate stems of a word: the word and single-suffix strips (with doubled-consonant and silent-e variants). */
function stems(word) {
  const out = new Set([word])
  if (/(ies|ied)$/.test(word) && word.length >= 5) out.add(`${word.slice(0, -3)}y`)
  for (const suf of SUFFIXES) {
    if (word.endsWith(suf) && word.length - suf.length >= 3) {
      const base = word.slice(0, -suf.length)
      out.add(base)
      if (suf !== "s" && suf !== "ly") out.add(`${base}e`)
      if (base.length >= 4 && base.at(-1) === base.at(-2) && !"aeiou".includes(base.at(-1))) out.add(base.slice(0, -1))
    }
  }
  return out
}

/** Content words (lowercase, letters only, 3+ letters, not stop words). */
function contentWords(text) {
  return [
    ...new Set(
      text
        .toLowerCase()
        .replace(/[’']/g, "'")
        .split(/[^a-z]+/)
        .filter((w) => w.length >= 3 && !STOP.has(w))
    )
  ]
}

/** Shared content words between two texts (returned as "qword~mword" pairs). */
function shared(a, b) {
  const bw = contentWords(b).map((w) => [w, stems(w)])
  const hits = []
  for (const w of contentWords(a)) {
    const s = stems(w)
    for (const [w2, s2] of bw) {
      if ([...s].some((x) => s2.has(x))) hits.push(w === w2 ? w : `${w}~${w2}`)
    }
  }
  return hits
}

/** Looser look-alike detector for warnings: a common prefix of 5+ letters. */
function prefixLookalikes(a, b) {
  const bw = contentWords(b)
  const hits = []
  for (const w of contentWords(a)) {
    for (const w2 of bw) {
      if (w.length >= 5 && w2.length >= 5 && w.slice(0, 5) === w2.slice(0, 5) && shared(w, w2).length === 0)
        hits.push(`${w}/${w2}`)
    }
  }
  return hits
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
const NUMBERS = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10 }

/** Period a time question refers to: {kind:'rel',min,max} | {kind:'month',month,year} | {kind:'when'} | null */
function timePeriod(q) {
  const t = q.toLowerCase()
  if (/\byesterday\b/.test(t)) return { kind: "rel", min: 1, max: 1, label: "yesterday" }
  const m = t.match(/\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten) days ago\b/)
  if (m) {
    const n = /^\d+$/.test(m[1]) ? Number(m[1]) : NUMBERS[m[1]]
    return { kind: "rel", min: n, max: n, label: `${n} days ago` }
  }
  if (/\ba couple of weeks ago\b/.test(t)) return { kind: "rel", min: 12, max: 18, label: "a couple of weeks ago" }
  if (/\blast week\b/.test(t)) return { kind: "rel", min: 7, max: 13, label: "last week" }
  if (/\bthis week\b|\bin the last few days\b/.test(t)) return { kind: "rel", min: 1, max: 5, label: "this week" }
  if (/\blast month\b/.test(t)) return { kind: "rel", min: 30, max: 60, label: "last month" }
  const mm = t.match(new RegExp(`\\bin (${MONTHS.join("|")})(?: (\\d{4}))?\\b`))
  if (mm)
    return {
      kind: "month",
      month: MONTHS.indexOf(mm[1]) + 1,
      year: mm[2] ? Number(mm[2]) : 2026,
      label: `in ${mm[1]} ${mm[2] ?? "(2026)"}`
    }
  if (/^\s*when\b|\bwhat date\b|\bhow long ago\b/.test(t)) return { kind: "when", label: "when" }
  return null
}

function daysSince(iso) {
  return Math.round((NOW - new Date(`${iso}T00:00:00Z`)) / 86400000)
}

const errors = []
const warnings = []
const err = (where, msg) => errors.push(`${where}: ${msg}`)
const warn = (where, msg) => warnings.push(`${where}: ${msg}`)

const files = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .sort()
if (files.length < 3) err("data", `expected at least 3 profile files, found ${files.length}`)

const totals = Object.fromEntries(CATEGORIES.map((c) => [c, { all: 0, heldout: 0 }]))
const seenQuestionIds = new Set()
const summaryRows = []

for (const file of files) {
  const where = file
  let data
  try {
    data = JSON.parse(fs.readFileSync(path.join(DIR, file), "utf8"))
  } catch (e) {
    err(where, `invalid JSON: ${e.message}`)
    continue
  }
  const allowedTop = new Set(["profile", "description", "memories", "questions"])
  for (const k of Object.keys(data)) if (!allowedTop.has(k)) err(where, `unexpected top-level field "${k}"`)
  if (typeof data.profile !== "string" || !/^[a-z0-9-]+$/.test(data.profile))
    err(where, "profile must be a lowercase name")
  else if (file !== `${data.profile}.json`) err(where, `file name should be ${data.profile}.json`)
  if (typeof data.description !== "string" || data.description.length < 10) err(where, "description missing")
  if (!Array.isArray(data.memories) || !Array.isArray(data.questions)) {
    err(where, "memories and questions must be arrays")
    continue
  }

  // ---- memories ----
  const mems = data.memories
  const byKey = new Map()
  const contents = new Set()
  const allowedMem = new Set([
    "key",
    "content",
    "type",
    "importance",
    "createdDaysAgo",
    "occurredDaysAgo",
    "occurredAt",
    "supersedes"
  ])
  if (mems.length < MIN_MEMORIES) err(where, `only ${mems.length} memories (need >= ${MIN_MEMORIES})`)
  for (const [i, m] of mems.entries()) {
    const w = `${where} memory[${i}]${m?.key ? ` ${m.key}` : ""}`
    for (const k of Object.keys(m)) if (!allowedMem.has(k)) err(w, `unexpected field "${k}"`)
    if (typeof m.key !== "string" || !m.key) err(w, "key missing")
    else if (byKey.has(m.key)) err(w, "duplicate key")
    else byKey.set(m.key, m)
    if (typeof m.content !== "string" || !m.content.trim()) err(w, "content missing")
    else {
      const norm = m.content.trim().toLowerCase().replace(/\s+/g, " ")
      if (contents.has(norm)) err(w, `duplicate content "${m.content}"`)
      contents.add(norm)
      const nWords = m.content.trim().split(/\s+/).length
      if (nWords < 5 || nWords > 25) err(w, `content has ${nWords} words (want 5-25): "${m.content}"`)
      if (!/^User\b/.test(m.content)) warn(w, `content does not start with "User": "${m.content}"`)
      if (/\b(todo|tbd|lorem|ipsum|placeholder|xxx)\b|\[|\]|\{|\}/i.test(m.content))
        err(w, `placeholder-like text: "${m.content}"`)
      if (/^(m\d+|#\d+|\d+[.)])/i.test(m.content)) err(w, "memory text looks numbered/tagged")
      if (!/[.!?]$/.test(m.content.trim())) warn(w, "content does not end with punctuation")
    }
    if (!TYPES.has(m.type)) err(w, `bad type "${m.type}"`)
    if (typeof m.importance !== "number" || !(m.importance >= 0 && m.importance <= 1))
      err(w, "importance must be a number in 0..1")
    if (!Number.isInteger(m.createdDaysAgo) || m.createdDaysAgo < 0) err(w, "createdDaysAgo must be an integer >= 0")
    else if (m.createdDaysAgo > 730) warn(w, `createdDaysAgo ${m.createdDaysAgo} is more than two years`)
    const hasDA = m.occurredDaysAgo !== undefined
    const hasAt = m.occurredAt !== undefined
    if (hasDA && hasAt) err(w, "use either occurredDaysAgo or occurredAt, not both")
    if ((hasDA || hasAt) && m.type !== "event") err(w, "occurrence time on a non-event memory")
    if (hasDA) {
      if (!Number.isInteger(m.occurredDaysAgo) || m.occurredDaysAgo < 0)
        err(w, "occurredDaysAgo must be an integer >= 0")
      else if (Number.isInteger(m.createdDaysAgo) && m.createdDaysAgo > m.occurredDaysAgo)
        err(w, `stored (${m.createdDaysAgo}d ago) before it happened (${m.occurredDaysAgo}d ago)`)
    }
    if (hasAt) {
      if (
        typeof m.occurredAt !== "string" ||
        !/^\d{4}-\d{2}-\d{2}$/.test(m.occurredAt) ||
        Number.isNaN(Date.parse(`${m.occurredAt}T00:00:00Z`))
      )
        err(w, `bad occurredAt "${m.occurredAt}"`)
      else {
        if (!/^(2025|2026)-/.test(m.occurredAt) || m.occurredAt >= "2026-11-01")
          err(w, `occurredAt ${m.occurredAt} must be in 2025 or 2026 before 2026-11-01`)
        const since = daysSince(m.occurredAt)
        if (Number.isInteger(m.createdDaysAgo) && m.createdDaysAgo > since)
          warn(w, `stored ${m.createdDaysAgo}d ago but occurredAt ${m.occurredAt} is only ${since}d before --now`)
      }
    }
  }
  for (const m of mems) {
    if (m.supersedes === undefined) continue
    const w = `${where} ${m.key}`
    if (!Array.isArray(m.supersedes) || m.supersedes.length === 0) {
      err(w, "supersedes must be a non-empty array")
      continue
    }
    for (const k of m.supersedes) {
      const old = byKey.get(k)
      if (!old) err(w, `supersedes unknown key ${k}`)
      else if (k === m.key) err(w, "supersedes itself")
      else if (!(old.createdDaysAgo > m.createdDaysAgo))
        err(w, `superseded ${k} (${old.createdDaysAgo}d) is not older than ${m.key} (${m.createdDaysAgo}d)`)
    }
  }
  const created = mems.map((m) => m.createdDaysAgo).filter(Number.isInteger)
  const minC = Math.min(...created)
  const maxC = Math.max(...created)
  if (minC > 3) err(where, `newest memory is ${minC} days old; spread should reach ~1 day`)
  if (maxC < 600) err(where, `oldest memory is only ${maxC} days old; spread should reach ~700 days`)
  const oldest = new Set(
    mems
      .map((m, i) => ({ m, i }))
      .sort((a, b) => b.m.createdDaysAgo - a.m.createdDaysAgo || a.i - b.i)
      .slice(0, OLDEST_N)
      .map(({ m }) => m.key)
  )
  const oldestCut = Math.min(...mems.filter((m) => oldest.has(m.key)).map((m) => m.createdDaysAgo))

  // transitive supersession chains
  const supersededBy = new Map()
  for (const m of mems) for (const k of m.supersedes ?? []) supersededBy.set(k, m.key)
  const chainOf = (key) => {
    const out = new Set()
    const stack = [...(byKey.get(key)?.supersedes ?? [])]
    while (stack.length) {
      const k = stack.pop()
      if (out.has(k)) continue
      out.add(k)
      stack.push(...(byKey.get(k)?.supersedes ?? []))
    }
    return out
  }

  // ---- questions ----
  const qs = data.questions
  const perCat = Object.fromEntries(CATEGORIES.map((c) => [c, { all: 0, heldout: 0, list: [] }]))
  const answerKeys = new Set()
  const qTexts = new Set()
  const allowedQ = new Set(["id", "category", "question", "answers", "stale", "split"])
  let noneSharing = 0
  for (const [i, q] of qs.entries()) {
    const w = `${where} ${q.id ?? `question[${i}]`}`
    for (const k of Object.keys(q)) if (!allowedQ.has(k)) err(w, `unexpected field "${k}"`)
    if (typeof q.id !== "string" || !q.id.startsWith(`${data.profile}-q`))
      err(w, `id should look like ${data.profile}-q001`)
    else if (seenQuestionIds.has(q.id)) err(w, "duplicate question id")
    seenQuestionIds.add(q.id)
    if (!CATEGORIES.includes(q.category)) {
      err(w, `bad category "${q.category}"`)
      continue
    }
    if (typeof q.question !== "string" || q.question.trim().length < 5) err(w, "question text missing")
    else if (qTexts.has(q.question.trim().toLowerCase())) err(w, "duplicate question text")
    qTexts.add(String(q.question).trim().toLowerCase())
    if (q.split !== "tune" && q.split !== "heldout") err(w, `split must be tune|heldout`)
    if (!Array.isArray(q.answers)) {
      err(w, "answers must be an array")
      continue
    }
    if (new Set(q.answers).size !== q.answers.length) err(w, "duplicate answer keys")
    for (const k of q.answers) if (!byKey.has(k)) err(w, `answer key ${k} does not exist`)
    if (q.stale !== undefined && q.category !== "changed") err(w, "`stale` is only for category changed")
    const pc = perCat[q.category]
    pc.all++
    if (q.split === "heldout") pc.heldout++
    pc.list.push(q)
    for (const k of q.answers) answerKeys.add(k)
    const ans = q.answers.map((k) => byKey.get(k)).filter(Boolean)

    switch (q.category) {
      case "none": {
        if (q.answers.length !== 0) err(w, "none questions must have answers []")
        if (mems.some((m) => shared(q.question, m.content).length > 0)) noneSharing++
        break
      }
      case "paraphrase": {
        if (q.answers.length < 1 || q.answers.length > 2) err(w, "paraphrase needs 1-2 answers")
        for (const a of ans) {
          const s = shared(q.question, a.content)
          if (s.length) err(w, `paraphrase shares content words with ${a.key}: ${s.join(", ")}`)
          const p = prefixLookalikes(q.question, a.content)
          if (p.length) warn(w, `paraphrase has look-alike word stems with ${a.key}: ${p.join(", ")}`)
        }
        break
      }
      case "keyword": {
        if (q.answers.length < 1 || q.answers.length > 2) err(w, "keyword needs 1-2 answers")
        for (const a of ans)
          if (shared(q.question, a.content).length === 0)
            err(w, `keyword question shares no content word with answer ${a.key}`)
        const distractors = mems.filter((m) => !q.answers.includes(m.key) && shared(q.question, m.content).length > 0)
        if (distractors.length < 2)
          err(w, `keyword question has only ${distractors.length} look-alike distractors sharing words`)
        if (VERBOSE)
          console.log(
            `  [${w}] distractors: ${distractors
              .slice(0, 6)
              .map((m) => `${m.key} ${JSON.stringify(shared(q.question, m.content))}`)
              .join("; ")}`
          )
        break
      }
      case "changed": {
        if (q.answers.length !== 1) err(w, "changed needs exactly one answer")
        if (!Array.isArray(q.stale) || q.stale.length === 0) {
          err(w, "changed needs a non-empty stale array")
          break
        }
        const a = ans[0]
        if (!a) break
        if (!a.supersedes) err(w, `answer ${a.key} has no supersedes`)
        const chain = chainOf(a.key)
        for (const k of q.stale) {
          if (!byKey.has(k)) err(w, `stale key ${k} does not exist`)
          else if (!chain.has(k)) err(w, `stale ${k} is not superseded (directly or transitively) by answer ${a.key}`)
          if (q.answers.includes(k)) err(w, "stale key is also an answer")
        }
        if (supersededBy.has(a.key)) err(w, `answer ${a.key} is itself superseded by ${supersededBy.get(a.key)}`)
        break
      }
      case "time": {
        if (q.answers.length < 1 || q.answers.length > 2) err(w, "time needs 1-2 answers")
        for (const a of ans)
          if (a.occurredDaysAgo === undefined && a.occurredAt === undefined)
            err(w, `answer ${a.key} has no occurredDaysAgo/occurredAt`)
        const p = timePeriod(q.question)
        if (!p) {
          err(w, `time question uses no recognised phrasing: "${q.question}"`)
          break
        }
        if (p.kind === "rel") {
          for (const a of ans) {
            if (a.occurredDaysAgo === undefined)
              err(w, `relative period "${p.label}" but answer ${a.key} has no occurredDaysAgo`)
            else if (a.occurredDaysAgo < p.min || a.occurredDaysAgo > p.max)
              err(w, `answer ${a.key} occurredDaysAgo ${a.occurredDaysAgo} not in "${p.label}" (${p.min}-${p.max})`)
          }
        } else if (p.kind === "month") {
          const prefix = `${p.year}-${String(p.month).padStart(2, "0")}`
          if (`${prefix}-01` >= "2026-11-01" && p.year === 2026)
            err(w, "month questions must be about months before November 2026")
          for (const a of ans)
            if (!(typeof a.occurredAt === "string" && a.occurredAt.startsWith(prefix)))
              err(w, `answer ${a.key} occurredAt ${a.occurredAt} not in ${prefix}`)
        }
        if (p.kind === "rel" || p.kind === "month") {
          // other events in the same period that share a content word with the question (possible ambiguity)
          const inPeriod = (m) => {
            if (p.kind === "rel")
              return Number.isInteger(m.occurredDaysAgo) && m.occurredDaysAgo >= p.min && m.occurredDaysAgo <= p.max
            return (
              typeof m.occurredAt === "string" &&
              m.occurredAt.startsWith(`${p.year}-${String(p.month).padStart(2, "0")}`)
            )
          }
          const others = mems.filter((m) => !q.answers.includes(m.key) && m.type === "event" && inPeriod(m))
          const sharing = others.filter((m) => shared(q.question, m.content).length > 0)
          if (sharing.length)
            warn(
              w,
              `other events in period "${p.label}" share words with the question: ${sharing.map((m) => `${m.key} "${m.content}"`).join(" | ")}`
            )
          if (VERBOSE && others.length)
            console.log(
              `  [${w}] other events in period: ${others.map((m) => `${m.key} ${JSON.stringify(m.content)}`).join(" | ")}`
            )
          const outside = mems.filter(
            (m) =>
              !q.answers.includes(m.key) &&
              m.type === "event" &&
              !inPeriod(m) &&
              shared(q.question, m.content).length > 0
          )
          if (outside.length === 0) warn(w, "no same-topic distractor events outside the period")
        }
        break
      }
    }
  }
  for (const c of CATEGORIES) {
    totals[c].all += perCat[c].all
    totals[c].heldout += perCat[c].heldout
    const n = perCat[c].all
    if (n === 0) {
      err(where, `no ${c} questions`)
      continue
    }
    const want = n / 3
    if (Math.abs(perCat[c].heldout - want) > 1)
      err(where, `${c}: ${perCat[c].heldout}/${n} heldout, want about a third`)
    // evenly spread: heldout questions should not all be bunched at one end of the list
    const idx = perCat[c].list.map((q, i) => (q.split === "heldout" ? i : -1)).filter((i) => i >= 0)
    if (n >= 6 && idx.length >= 2 && (idx[0] > n / 2 || idx.at(-1) < n / 2))
      warn(where, `${c}: heldout questions are bunched (${idx.join(",")})`)
  }
  if (qs.length < 50 || qs.length > 75) err(where, `${qs.length} questions (want about 60)`)
  const noneN = perCat.none.all
  if (noneN && (noneSharing / noneN < 0.3 || noneSharing / noneN > 0.7))
    warn(where, `none: ${noneSharing}/${noneN} share a word with some memory (want about half)`)

  const answered = [...answerKeys]
  const old = answered.filter((k) => oldest.has(k))
  if (old.length * 3 < answered.length)
    err(where, `only ${old.length}/${answered.length} answer memories are among the oldest ${OLDEST_N} (need >= 1/3)`)
  const types = {}
  for (const m of mems) types[m.type] = (types[m.type] ?? 0) + 1
  summaryRows.push({
    profile: data.profile,
    memories: mems.length,
    types,
    createdRange: `${minC}-${maxC}`,
    questions: qs.length,
    perCat: Object.fromEntries(CATEGORIES.map((c) => [c, `${perCat[c].all} (${perCat[c].heldout} heldout)`])),
    oldAnswers: `${old.length}/${answered.length} answer memories in oldest ${OLDEST_N} (createdDaysAgo >= ${oldestCut})`,
    noneSharing: `${noneSharing}/${noneN} none questions share a word with some memory`
  })
}

const totalQ = CATEGORIES.reduce((s, c) => s + totals[c].all, 0)
if (totalQ < MIN_TOTAL_QUESTIONS) err("data", `only ${totalQ} questions in total (need >= ${MIN_TOTAL_QUESTIONS})`)
for (const c of CATEGORIES) {
  const n = totals[c].all
  if (n < Math.floor(TARGET[c] * 0.8) || n > Math.ceil(TARGET[c] * 1.25))
    err("data", `${c}: ${n} questions in total, target about ${TARGET[c]}`)
  if (n && (totals[c].heldout / n < 0.28 || totals[c].heldout / n > 0.4))
    err("data", `${c}: heldout share ${(totals[c].heldout / n).toFixed(2)} is not about a third`)
}

console.log(`Recall benchmark data check (${files.length} files, --now=${NOW.toISOString().slice(0, 10)})\n`)
for (const r of summaryRows) {
  console.log(
    `${r.profile}: ${r.memories} memories ${JSON.stringify(r.types)}, createdDaysAgo ${r.createdRange}, ${r.questions} questions`
  )
  for (const c of CATEGORIES) console.log(`  ${c.padEnd(10)} ${r.perCat[c]}`)
  console.log(`  ${r.oldAnswers}`)
  console.log(`  ${r.noneSharing}`)
}
console.log(`\nTotal: ${totalQ} questions`)
for (const c of CATEGORIES)
  console.log(
    `  ${c.padEnd(10)} ${String(totals[c].all).padStart(3)} (${totals[c].heldout} heldout, target ~${TARGET[c]})`
  )
if (warnings.length) {
  console.log(`\n${warnings.length} warning(s):`)
  for (const w of warnings) console.log(`  WARN ${w}`)
}
if (errors.length) {
  console.log(`\n${errors.length} error(s):`)
  for (const e of errors) console.log(`  ERROR ${e}`)
  process.exit(1)
}
console.log("\nOK: all checks passed.")
