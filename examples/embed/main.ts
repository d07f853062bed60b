/**
 * An Effect application that embeds the gateway: it mounts the management API and the proxy next
 * to its own routes, brings its own PostgreSQL client, and registers a plugin in code.
 *
 *   APP_DATABASE_URL=postgres://… PORT=4000 node examples/embed/main.ts
 *
 * Everything else (upstream, keys, extraction) is the gateway's usual environment.
 */
import { createServer } from "node:http"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import {
  AppConfig,
  DEFAULT_NAMESPACE,
  definePlugin,
  EmbeddableRoutes,
  GatewayServices,
  inNamespace,
  Profiles,
  pgClientOptions
} from "../../src/index.ts"

/** The application's own plugin: every chat of its users mentions their plan. */
const planNote = definePlugin({
  name: "example-plan",
  hooks: {
    inject: () =>
      Effect.succeed([
        {
          title: "Account",
          items: [{ id: "plan", text: "The user is on the Pro plan of Example App." }],
          priority: 150
        }
      ])
  }
})

/**
 * The application's own routes; they may use the gateway's services, in a namespace they name (the
 * gateway's own routes take it from the request's key).
 */
const AppRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const profiles = yield* Profiles
    yield* router.add("GET", "/hello", HttpServerResponse.text("Hello from Example App"))
    yield* router.add(
      "GET",
      "/app/users/:id/summary",
      Effect.gen(function* () {
        const { params } = yield* HttpRouter.RouteContext
        return yield* profiles.find(params["id"] ?? "").pipe(
          Effect.map((profile) =>
            HttpServerResponse.jsonUnsafe({ user: profile.externalId, summary: profile.summary })
          ),
          Effect.catchTag("ProfileNotFound", () =>
            Effect.succeed(HttpServerResponse.text("unknown user", { status: 404 }))
          ),
          Effect.provide(inNamespace(DEFAULT_NAMESPACE))
        )
      })
    )
  })
)

/** Its own database client, built the way the gateway's stores expect. */
const Database = PgClient.layerConfig({
  url: Config.Redacted("APP_DATABASE_URL"),
  maxConnections: Config.succeed(5),
  transformResultNames: Config.succeed(pgClientOptions.transformResultNames),
  transformQueryNames: Config.succeed(pgClientOptions.transformQueryNames),
  transformJson: Config.succeed(pgClientOptions.transformJson)
})

const Server = NodeHttpServer.layerConfig(createServer, {
  port: Config.Port("PORT").pipe(Config.withDefault(4000)),
  host: Config.succeed("127.0.0.1")
})

/**
 * Listens once every route is built: `HttpRouter.serve` would open the port first, and a request
 * arriving while the routes are still being built (the console's files read, the MCP server set up)
 * would never be answered.
 */
const App = Layer.unwrap(
  Effect.map(HttpRouter.toHttpEffect(Layer.mergeAll(EmbeddableRoutes, AppRoutes)), (handler) =>
    HttpServer.serve(handler).pipe(Layer.provide(Server))
  )
).pipe(
  Layer.provide(NodeHttpServer.layerHttpServices),
  Layer.provide(GatewayServices({ plugins: [planNote] })),
  Layer.provide(Database),
  Layer.provide(AppConfig.layer)
)

NodeRuntime.runMain(Layer.launch(App))
