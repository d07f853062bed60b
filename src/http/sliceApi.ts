import type { NonEmptyReadonlyArray } from "effect/Array"
import { HttpApi, type HttpApiGroup } from "effect/http-api"

/** The id the management API is served under (`app/Api.ts` assembles its groups). */
export const API_ID = "gateway"

/**
 * A slice's groups on their own, under the management API's id: a slice builds its handlers against
 * this (`HttpApiBuilder.group(sliceApi(Group), …)`), so it implements its routes without importing
 * the app that assembles every slice. Handlers use the API only for its annotations, which are the
 * OpenAPI document's.
 */
export const sliceApi = <const Groups extends NonEmptyReadonlyArray<HttpApiGroup.Constraint>>(...groups: Groups) =>
  HttpApi.make(API_ID).add(...groups)
