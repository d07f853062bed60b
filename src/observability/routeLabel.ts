import { Context, Effect } from "effect"
import { HttpRouter, type HttpServerResponse } from "effect/http"
import type * as Types from "effect/Types"

/** The label of a request no route took: an unknown path, or one refused before routing (key, limits). */
export const UNMATCHED_ROUTE = "unmatched"

/**
 * Where the router writes the template of the route it matched (`/api/profiles/:id`), for the
 * request's metric labels: made per request by whoever labels it, read once the response is ready.
 */
export class MatchedRoute {
  template: string | undefined = undefined

  /** The route template, or `unmatched`: ids and unknown paths never become labels. */
  get label(): string {
    return this.template ?? UNMATCHED_ROUTE
  }
}

export const CurrentMatchedRoute = Context.Reference<MatchedRoute | undefined>(
  "gateway/observability/CurrentMatchedRoute",
  {
    defaultValue: () => undefined
  }
)

const routeOf = (context: Context.Context<never>) =>
  Context.getOrUndefined(context, HttpRouter.RouteContext)?.route.path

/**
 * A new `MatchedRoute` for the request being handled; already filled when the router has matched
 * it (the labelling runs as route middleware, inside the route).
 */
export const newMatchedRoute: Effect.Effect<MatchedRoute> = Effect.withFiber((fiber) => {
  const matched = new MatchedRoute()
  matched.template = routeOf(fiber.context)
  return Effect.succeed(matched)
})

/** Notes the matched route's template in the request's `MatchedRoute`, then runs the route. */
export const noteMatchedRoute = <E, R>(route: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.withFiber<HttpServerResponse.HttpServerResponse, E, R>((fiber) => {
    const matched = fiber.getRef(CurrentMatchedRoute)
    if (matched !== undefined) matched.template = routeOf(fiber.context) ?? matched.template
    return route
  })

/**
 * Route middleware for every route of a router: the router has matched the request by then, and
 * says which route it took (`HttpRouter.RouteContext`), so labels are never derived from paths by hand.
 */
export const MatchedRouteMiddleware = HttpRouter.middleware(
  (route: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) => noteMatchedRoute(route)
)
