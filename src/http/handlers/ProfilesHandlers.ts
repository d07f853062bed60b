import { DateTime, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileStore } from "../../store/ProfileStore.ts"
import { DEFAULT_PAGE_SIZE, GatewayApi, MAX_PAGE_SIZE, ProfileCreated, ProfileFound } from "../Api.ts"
import { profileNotFound } from "./domainErrors.ts"

export const ProfilesHandlers = HttpApiBuilder.group(
  GatewayApi,
  "profiles",
  Effect.fn(function*(handlers) {
    const store = yield* ProfileStore
    return handlers
      .handle("list", ({ query }) =>
        store.list({
          limit: Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
          offset: query.offset ?? 0,
          search: query.search
        }))
      .handle("create", ({ payload }) =>
        store.getOrCreate(payload.externalId).pipe(
          Effect.map(({ created, profile }) => created ? new ProfileCreated({ profile }) : new ProfileFound({ profile }))
        ))
      .handle("get", ({ params }) =>
        store.detail(params.id).pipe(
          Effect.map(({ profile, recentMemories, traits }) => ({ profile: { ...profile, traits }, recentMemories })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("update", ({ params, payload }) =>
        store.setSummary(params.id, payload.summary).pipe(
          Effect.map((profile) => ({ profile })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("remove", ({ params }) =>
        store.remove(params.id).pipe(
          Effect.map((deleted) => ({ success: true as const, deleted })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("export", ({ params }) =>
        store.exportAll(params.id).pipe(
          Effect.flatMap((data) => Effect.map(DateTime.now, (exportedAt) => ({ ...data, exportedAt }))),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
  })
)
