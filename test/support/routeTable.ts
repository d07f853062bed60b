import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer, Scope } from "effect"
import { HttpRouter } from "effect/http"
import { AppConfig } from "../../src/app/AppConfig.ts"
import { GatewayServices } from "../../src/app/Gateway.ts"
import { HttpAppRoutes } from "../../src/app/HttpApp.ts"
import { DatabaseClientLive } from "../../src/db/Database.ts"

export interface RouteEntry {
  readonly method: string
  readonly path: string
}

/**
 * A router that notes every route added to it: the gateway's routes as the server registers them,
 * so a test can go over each one (nothing kept by hand to fall out of date).
 */
const recordingRouter = (table: Array<RouteEntry>) =>
  Layer.effect(
    HttpRouter.HttpRouter,
    Effect.map(HttpRouter.make, (router) =>
      HttpRouter.HttpRouter.of({
        ...router,
        add: (method, path, handler, options) => {
          table.push({ method, path })
          return router.add(method, path, handler, options)
        },
        addAll: (routes) => {
          for (const route of routes) table.push({ method: route.method, path: route.path })
          return router.addAll(routes)
        }
      })
    )
  )

/** Every route the gateway serves (method and path template), read from its routes as they register. */
export const routeTable = async (databaseUrl: string): Promise<ReadonlyArray<RouteEntry>> => {
  const table: Array<RouteEntry> = []
  const environment = ConfigProvider.layer(
    ConfigProvider.fromUnknown({
      LOG_LEVEL: "error",
      EXTRACTION_CONCURRENCY: "0",
      EMBEDDINGS: "off",
      DATABASE_URL: databaseUrl
    })
  )
  const scope = Effect.runSync(Scope.make())
  try {
    await Effect.runPromise(
      Layer.buildWithScope(
        // What the routes ask of the server that runs them (`HttpRouter.Request`): nothing runs them here.
        (
          HttpAppRoutes as unknown as Layer.Layer<
            never,
            unknown,
            HttpRouter.Request.Without<Layer.Services<typeof HttpAppRoutes>>
          >
        ).pipe(
          Layer.provide(recordingRouter(table)),
          Layer.provide(NodeHttpServer.layerHttpServices),
          Layer.provide(GatewayServices()),
          Layer.provide(DatabaseClientLive),
          Layer.provide(AppConfig.layer),
          Layer.provide(environment)
        ),
        scope
      )
    )
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  return table
}
