import { Schema } from "effect"

/**
 * Where a request's context goes: `latest` (after the latest item the model did not write, so the
 * app's prefix — system prompt, history, tools — reaches the provider unchanged and stays in its
 * prompt cache; the blocks of earlier turns are put back where they were), or `system` (appended to
 * the operator's instructions: the first system message, `instructions`, Anthropic's `system`).
 */
export const InjectionPlacement = Schema.Literals(["latest", "system"])
export type InjectionPlacement = typeof InjectionPlacement.Type
