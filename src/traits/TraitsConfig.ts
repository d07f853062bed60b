import { type Config, Context } from "effect"
import { optionalString, section } from "../config/values.ts"

export const traitsFromEnv = section({
  /** `TRAITS_FILE`: a JSON trait schema that replaces the built-in one. */
  file: optionalString("TRAITS_FILE")
})

export type TraitsSettings = Config.Success<typeof traitsFromEnv>

export class TraitsConfig extends Context.Service<TraitsConfig, TraitsSettings>()("gateway/traits/TraitsConfig") {}
