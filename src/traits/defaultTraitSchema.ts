import type { TraitSchemaFile } from "../domain/TraitSchemaFile.ts"

/** The trait schema in effect when `TRAITS_FILE` is not set. */
export const defaultTraitSchema: TraitSchemaFile = {
  name: {
    type: "string",
    category: "identity",
    description: "The name the user wants to be called",
    injection: { template: "Name: {{value}}" }
  },
  preferred_language: {
    type: "string",
    category: "communication",
    description: "The language the user prefers to be answered in",
    injection: { template: "Preferred language: {{value}}" }
  },
  communication_style: {
    type: "string",
    category: "communication",
    description: "How the user likes to be addressed, e.g. formal, casual, playful",
    injection: { template: "Communication style: {{value}}" }
  },
  detail_preference: {
    type: "enum",
    enum: ["brief", "balanced", "detailed"],
    category: "communication",
    description: "How much detail the user wants in answers",
    injection: { template: "Preferred level of detail: {{value}}" }
  },
  expertise_level: {
    type: "enum",
    enum: ["beginner", "intermediate", "advanced", "expert"],
    category: "context",
    description: "The user's expertise in the subject they talk about",
    injection: { template: "Expertise: {{value}}" }
  },
  timezone: {
    type: "string",
    category: "context",
    description: "The user's IANA time zone, e.g. Europe/Berlin",
    injection: { template: "Time zone: {{value}}" }
  },
  interests: {
    type: "array",
    items: { type: "string" },
    category: "preferences",
    description: "Topics the user is interested in",
    injection: { template: "Interests: {{value}}" }
  },
  current_goals: {
    type: "array",
    items: { type: "string" },
    category: "context",
    description: "What the user is currently trying to achieve",
    injection: { template: "Current goals: {{value}}" }
  },
  nps_category: {
    type: "enum",
    enum: ["promoter", "passive", "detractor"],
    category: "business",
    description: "Net Promoter Score group derived from the user's stated likelihood to recommend",
    injection: { enabled: false }
  },
  risk_level: {
    type: "enum",
    enum: ["low", "medium", "high", "critical"],
    category: "business",
    description: "Churn or account risk as judged from the conversation",
    injection: { enabled: false }
  },
  segment: {
    type: "enum",
    enum: ["hobbyist", "smb", "mid-market", "enterprise"],
    category: "business",
    description: "The customer segment the user belongs to",
    injection: { enabled: false }
  }
}
