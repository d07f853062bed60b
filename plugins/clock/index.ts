import { Config, Context, DateTime, Effect, Layer, Predicate } from "effect"
import { definePlugin } from "../../src/plugins/Plugin.ts"

/** Which trait holds the user's IANA time zone (`CLOCK_TIMEZONE_TRAIT`, default `timezone`). */
class ClockSettings extends Context.Service<ClockSettings, { readonly timezoneTrait: string }>()(
  "plugins/clock/ClockSettings"
) {}

const isTimeZone = (zone: unknown): zone is string => {
  if (!Predicate.isString(zone)) return false
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** "Sunday, 22 November 2026 at 14:05" in the given zone. */
export const formatNow = (now: DateTime.Utc, zone: string) =>
  new Intl.DateTimeFormat("en-GB", { timeZone: zone, dateStyle: "full", timeStyle: "short" }).format(
    DateTime.toDateUtc(now)
  )

/**
 * Tells the model the current date and time where the user is: in the zone of their `timezone`
 * trait when it holds a valid IANA zone, else in UTC.
 */
export default definePlugin({
  name: "clock",
  layer: Layer.effect(
    ClockSettings,
    Effect.map(Config.String("CLOCK_TIMEZONE_TRAIT").pipe(Config.withDefault("timezone")), (timezoneTrait) =>
      ClockSettings.of({ timezoneTrait })
    )
  ),
  hooks: {
    inject: (context) =>
      Effect.gen(function* () {
        const { timezoneTrait } = yield* ClockSettings
        const stored = context.traits.find((trait) => trait.key === timezoneTrait)?.value
        const zone = isTimeZone(stored) ? stored : "UTC"
        const now = yield* DateTime.now
        return [
          {
            title: "Current time for the user",
            items: [{ id: zone, text: `${formatNow(now, zone)} (${zone})` }],
            priority: 250,
            inline: true
          }
        ]
      })
  }
})
