/**
 * The conversation of `bench/promptCache.ts`: a personal-assistant app's system prompt (about 2,000
 * characters), 24 memories of one user on distinct topics, and 20 messages, each new and about one of
 * those memories (4 are never asked about).
 */

export const SYSTEM_PROMPT = [
  "You are Sage, the assistant inside the Daybook app, a personal planner used by people who want help",
  "with the practical side of their lives: meals, errands, health routines, travel, money, family and",
  "hobbies. You answer in plain, friendly English, as a knowledgeable friend would, not as a manual.",
  "",
  "How to answer:",
  "- Lead with the answer or the recommendation, then give the reasons in a few short sentences.",
  "- Keep answers under 200 words unless the user asks for detail or a step-by-step plan.",
  "- Use a short list only when the steps must happen in order or the options must be compared.",
  "- Prefer concrete suggestions (a time, a quantity, a named product type) over general advice.",
  "- When something depends on facts you do not have, say what it depends on and give the most likely case.",
  "- Never invent prices, opening hours, phone numbers or addresses; suggest where to check them instead.",
  "",
  "Health and safety:",
  "- You are not a doctor, lawyer or financial adviser. For symptoms that sound serious (chest pain,",
  "  trouble breathing, a severe allergic reaction) tell the user to contact emergency services at once.",
  "- For medication, dosage or diagnosis questions, give general information and recommend a pharmacist",
  "  or doctor for anything specific to the user.",
  "- Take allergies and injuries the user has mentioned into account in every suggestion.",
  "",
  "Money:",
  "- Show the arithmetic when you compare costs, and round to whole units of the user's currency.",
  "- Do not recommend specific shares, funds or lenders.",
  "",
  "Tone:",
  "- Be warm but brief. Do not open with compliments about the question or close with offers of more help.",
  "- Match the user's level of formality. Use the user's units (metric or imperial) and spelling.",
  "- If the user seems stressed or tired, acknowledge it in one sentence before the practical part.",
  "",
  "The app shows your answer in a chat bubble that renders Markdown: bold for key numbers is fine,",
  "headings are not. Today the user is on the mobile app."
].join("\n")

export interface Memory {
  readonly content: string
  readonly type: "fact" | "preference" | "context"
}

export const MEMORIES: ReadonlyArray<Memory> = [
  {
    content: "The user's dog is a four-year-old beagle named Biscuit who is terrified of thunderstorms.",
    type: "fact"
  },
  { content: "The user has a severe peanut allergy and always carries an adrenaline pen.", type: "fact" },
  {
    content: "The user works as an emergency nurse at Leeds General Infirmary, mostly on night shifts.",
    type: "fact"
  },
  {
    content: "The user is training for the Berlin marathon in September and runs four times a week.",
    type: "context"
  },
  { content: "The user's daughter Maya is seven and has just started piano lessons.", type: "fact" },
  { content: "The user drives a 2015 Toyota Prius with about 140,000 miles on it.", type: "fact" },
  { content: "The user has been vegetarian for ten years but still eats eggs and cheese.", type: "preference" },
  {
    content: "The user is learning Portuguese because their partner's family lives in Porto.",
    type: "context"
  },
  { content: "The user rents a third-floor flat with no lift and a tiny kitchen.", type: "fact" },
  {
    content: "The user is saving for a house deposit and puts aside 600 pounds every month.",
    type: "context"
  },
  {
    content: "The user sleeps badly after night shifts and uses blackout curtains and earplugs.",
    type: "fact"
  },
  {
    content: "The user grows tomatoes, basil and chillies in pots on a small south-facing balcony.",
    type: "fact"
  },
  { content: "The user switched to decaf coffee after a doctor flagged high blood pressure.", type: "fact" },
  {
    content: "The user is planning a two-week trip to Japan next April, flying into Osaka.",
    type: "context"
  },
  { content: "The user plays bass guitar in a weekend cover band called The Night Owls.", type: "fact" },
  {
    content: "The user's mother lives alone in Cardiff and is recovering from a hip replacement.",
    type: "fact"
  },
  { content: "The user had surgery on their left knee two years ago and avoids deep squats.", type: "fact" },
  {
    content: "The user is reading all of Terry Pratchett's Discworld novels in publication order.",
    type: "preference"
  },
  { content: "The user's laptop is a 2019 MacBook Air that struggles with video editing.", type: "fact" },
  { content: "The user's partner Jonas teaches chemistry at a secondary school.", type: "fact" },
  { content: "The user's birthday is on 14 March and they dislike surprise parties.", type: "preference" },
  { content: "The user volunteers at a food bank every other Saturday morning.", type: "context" },
  { content: "The user cannot swim and gets anxious around deep water.", type: "fact" },
  {
    content: "The user prefers budgets and plans laid out as simple spreadsheets rather than apps.",
    type: "preference"
  }
]

/** The user's messages, one a turn, each with the memory (an index into MEMORIES) it is about. */
export const MESSAGES: ReadonlyArray<{ readonly text: string; readonly memory: number }> = [
  {
    text: "There's a thunderstorm forecast for tonight. How can I keep my dog calm while it passes?",
    memory: 0
  },
  {
    text: "My team is going out for Thai food on Friday. What should I watch out for on the menu with my peanut allergy?",
    memory: 1
  },
  {
    text: "I have a 30 km long run this weekend as part of my marathon training. What should I eat the evening before?",
    memory: 3
  },
  {
    text: "My daughter keeps skipping her piano practice. Any ideas to make it more fun for a seven-year-old?",
    memory: 4
  },
  {
    text: "The check engine light came on in my Prius this morning. Is it safe to drive to work until a garage looks at it?",
    memory: 5
  },
  {
    text: "I'm starting a run of four night shifts at the hospital next week. How should I plan my meals around them?",
    memory: 2
  },
  {
    text: "Can you give me a short plan to practise Portuguese for 15 minutes a day before we visit Porto?",
    memory: 7
  },
  {
    text: "We want to buy a washing machine but our flat has no lift. How do people usually get one up to the third floor?",
    memory: 8
  },
  {
    text: "I have an extra 200 pounds this month. Should it go into the house deposit or somewhere else?",
    memory: 9
  },
  {
    text: "I slept only four hours after last night's shift. How can I get better sleep during the day?",
    memory: 10
  },
  { text: "Some of my tomato plants on the balcony have yellow leaves. What could be causing it?", memory: 11 },
  { text: "Is decaf coffee actually fine with high blood pressure, or should I cut coffee out entirely?", memory: 12 },
  { text: "What's a good way to split two weeks in Japan if we fly into Osaka in April?", memory: 13 },
  {
    text: "The band has a gig at a pub next month. How do I stop my bass from sounding muddy in a small room?",
    memory: 14
  },
  {
    text: "My mother is home from hospital after her hip replacement. What can I set up in her house to make it safer?",
    memory: 15
  },
  { text: "Can you suggest a leg workout I can do at home that's easy on my knee?", memory: 16 },
  { text: "I just finished Guards! Guards!. Which Discworld novel comes next in publication order?", memory: 17 },
  {
    text: "My MacBook Air freezes when I export video. Is it worth upgrading the laptop or should I try something else first?",
    memory: 18
  },
  { text: "My birthday is coming up in March. Can you help me plan a low-key day?", memory: 20 },
  {
    text: "Jonas has a long week of marking chemistry exams. What could I cook to cheer him up?",
    memory: 19
  }
]
