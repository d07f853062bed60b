import { Effect } from "effect"
import type { GatewayApiClient } from "../client/GatewayClient.ts"
import { isUuid } from "../domain/Uuid.ts"
import { NotFound } from "../http/OpenAiError.ts"

/**
 * The internal id of the profile a command writes to, created if new. A UUID names an existing
 * profile by its internal id, as in the API's paths; one that names none is taken as a user id.
 * Later calls use the internal id, so a user id that looks like a UUID is never read as one.
 */
export const profileToWrite = (api: GatewayApiClient, user: string) => {
  const create = api.profiles.create({ payload: { externalId: user } }).pipe(Effect.map(({ profile }) => profile.id))
  return isUuid(user)
    ? api.profiles.get({ params: { id: user } }).pipe(
        Effect.map(({ profile }) => profile.id),
        Effect.catchIf(
          (error) => error instanceof NotFound,
          () => create
        )
      )
    : create
}
