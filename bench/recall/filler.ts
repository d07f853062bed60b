/**
 * Filler memories for the 10,000-memory profile: everyday facts, preferences, events and context
 * about people, places, food, work and hobbies, made from templates with a fixed seed (the same
 * haystack on every run). They answer none of the questions; they only make finding the answer harder.
 */
import type { DatasetMemory } from "./dataset.ts"

const pick = <A>(random: () => number, items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!

/** A small deterministic generator (mulberry32). */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const names = [
  "Priya",
  "Marco",
  "Aisha",
  "Tom",
  "Yuki",
  "Sofia",
  "Omar",
  "Greta",
  "Luis",
  "Hannah",
  "Kwame",
  "Elena",
  "Ravi",
  "Chloe",
  "Ivan",
  "Mei",
  "Jonas",
  "Fatima",
  "Pedro",
  "Nora"
]
const relations = [
  "colleague",
  "neighbour",
  "cousin",
  "old school friend",
  "manager",
  "dentist",
  "landlord",
  "climbing partner",
  "book club friend",
  "former flatmate"
]
const places = [
  "Porto",
  "Kraków",
  "Valencia",
  "Ghent",
  "Ljubljana",
  "Bergen",
  "Seville",
  "Tallinn",
  "Bologna",
  "Galway",
  "Lyon",
  "Utrecht",
  "Salzburg",
  "Cork",
  "Nantes",
  "Trieste"
]
const foods = [
  "ramen",
  "shakshuka",
  "pad thai",
  "paella",
  "pho",
  "falafel wraps",
  "risotto",
  "bibimbap",
  "tacos al pastor",
  "moussaka",
  "jollof rice",
  "pierogi",
  "laksa",
  "ceviche",
  "gnocchi",
  "dal makhani"
]
const hobbies = [
  "pottery",
  "bouldering",
  "chess",
  "birdwatching",
  "salsa dancing",
  "origami",
  "sourdough baking",
  "kayaking",
  "knitting",
  "photography",
  "woodworking",
  "trail running",
  "calligraphy",
  "gardening",
  "astronomy",
  "fencing"
]
const things = [
  "a standing desk",
  "noise-cancelling headphones",
  "a cast-iron pan",
  "an e-reader",
  "a drone",
  "a rowing machine",
  "a label printer",
  "a coffee grinder",
  "a tent",
  "a mechanical keyboard",
  "a sewing machine",
  "a smartwatch"
]
const shows = [
  "a Scandinavian crime drama",
  "a baking competition",
  "a documentary about octopuses",
  "a space opera series",
  "a sitcom about a hotel",
  "a podcast on economic history",
  "a true-crime podcast",
  "an anime about volleyball"
]
const feelings = [
  "loved",
  "was disappointed by",
  "found it overrated",
  "enjoyed",
  "could not finish",
  "wants to revisit"
]
const tasks = [
  "migrating the billing reports",
  "a quarterly planning deck",
  "interviewing two candidates",
  "a vendor contract review",
  "onboarding a new hire",
  "an audit of old spreadsheets",
  "a customer workshop",
  "rewriting the style guide"
]
const months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]

/** Each template's memories come with cues, as the extraction model would write them. */
const templates: ReadonlyArray<
  (r: () => number) => { content: string; type: DatasetMemory["type"]; cues: ReadonlyArray<string> }
> = [
  (r) => ({
    type: "fact",
    content: `User's ${pick(r, relations)} ${pick(r, names)} recently moved to ${pick(r, places)}.`,
    cues: ["visiting friends", "keeping in touch", "trips abroad", "moving house"]
  }),
  (r) => ({
    type: "preference",
    content: `User ${pick(r, feelings)} the ${pick(r, foods)} at a small place in ${pick(r, places)}.`,
    cues: ["eating out", "restaurant picks", "travel food", "dinner plans"]
  }),
  (r) => ({
    type: "event",
    content: `User spent a weekend trying ${pick(r, hobbies)} with ${pick(r, names)}.`,
    cues: ["weekend plans", "new hobbies", "trying things"]
  }),
  (r) => ({
    type: "fact",
    content: `User owns ${pick(r, things)} that ${pick(r, names)} gave as a present.`,
    cues: ["gifts", "household gadgets", "things at home"]
  }),
  (r) => ({
    type: "preference",
    content: `User ${pick(r, feelings)} ${pick(r, shows)} that ${pick(r, names)} recommended.`,
    cues: ["what to watch", "recommendations", "evenings in"]
  }),
  (r) => ({
    type: "context",
    content: `User is busy at work with ${pick(r, tasks)} this month.`,
    cues: ["work stress", "deadlines", "busy weeks", "office"]
  }),
  (r) => ({
    type: "event",
    content: `User had dinner with ${pick(r, names)} and talked about ${pick(r, hobbies)}.`,
    cues: ["catching up", "evenings out", "friends"]
  }),
  (r) => ({
    type: "fact",
    content: `User's ${pick(r, relations)} ${pick(r, names)} is learning ${pick(r, hobbies)}.`,
    cues: ["family and friends", "hobbies", "learning"]
  }),
  (r) => ({
    type: "preference",
    content: `User would rather cook ${pick(r, foods)} at home than order it.`,
    cues: ["cooking", "takeaway", "weeknight meals", "recipes"]
  }),
  (r) => ({
    type: "context",
    content: `User is thinking about buying ${pick(r, things)} before ${pick(r, months)}.`,
    cues: ["shopping", "buying gadgets", "budget"]
  }),
  (r) => ({
    type: "event",
    content: `User visited ${pick(r, places)} for a long weekend with ${pick(r, names)}.`,
    cues: ["weekend trips", "travel", "city breaks"]
  }),
  (r) => ({
    type: "fact",
    content: `User lent ${pick(r, things)} to ${pick(r, names)} and never got it back.`,
    cues: ["borrowing", "lending things", "friends"]
  }),
  (r) => ({
    type: "preference",
    content: `User finds ${pick(r, hobbies)} relaxing after a long week.`,
    cues: ["relaxing", "unwinding", "free time"]
  }),
  (r) => ({
    type: "context",
    content: `User promised ${pick(r, names)} help with ${pick(r, tasks)}.`,
    cues: ["favours", "helping out", "work"]
  }),
  (r) => ({
    type: "event",
    content: `User watched ${pick(r, shows)} with ${pick(r, names)} and ${pick(r, feelings)} it.`,
    cues: ["films and series", "evenings in", "friends"]
  })
]

export interface FillerMemory extends DatasetMemory {
  readonly cues: ReadonlyArray<string>
}

/** `count` distinct filler memories, created between 1 and 700 days ago. */
export const fillerMemories = (count: number, seed = 42): ReadonlyArray<FillerMemory> => {
  const random = seeded(seed)
  const seen = new Set<string>()
  const memories: Array<FillerMemory> = []
  while (memories.length < count) {
    const { content, cues, type } = pick(random, templates)(random)
    if (seen.has(content)) continue
    seen.add(content)
    memories.push({
      key: `filler-${memories.length}`,
      content,
      cues,
      type,
      importance: Math.round((0.2 + random() * 0.6) * 100) / 100,
      createdDaysAgo: 1 + Math.floor(random() * 700)
    })
  }
  return memories
}
