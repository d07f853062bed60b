/**
 * Arm F of the benchmark: what `bareProxy.ts` does, served by Effect's HTTP server and router (the
 * stack the gateway runs on) — the floor for a proxy written on it. C − F is the gateway's own work:
 * its middleware, memory, recording, metrics.
 *
 *   UPSTREAM=http://127.0.0.1:9000 PORT=9101 node bench/effectFloorProxy.ts
 */
import { createServer } from "node:http"
import { NodeHttpServer, NodeRuntime, NodeStream } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Pool } from "undici"

const upstream = new Pool(process.env["UPSTREAM"] ?? "http://127.0.0.1:9000", { connections: 256, pipelining: 1 })
const MEMORY = "Background about the user: prefers short answers, works as a data engineer, lives in Lyon."

const relay = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = JSON.parse(yield* request.text) as { messages?: Array<unknown> }
  body.messages = [{ role: "system", content: MEMORY }, ...(body.messages ?? [])]
  // Interrupting the handler (the client went away) aborts the provider call.
  const response = yield* Effect.tryPromise((signal) =>
    upstream.request({
      method: "POST",
      path: request.url,
      headers: { "content-type": "application/json", authorization: "Bearer bench" },
      body: JSON.stringify(body),
      signal
    })
  )
  return HttpServerResponse.stream(
    NodeStream.fromReadable<Uint8Array, unknown>({ evaluate: () => response.body, onError: (error) => error }),
    {
      status: response.statusCode,
      contentType: String(response.headers["content-type"] ?? "application/json")
    }
  )
}).pipe(Effect.catch(() => Effect.succeed(HttpServerResponse.empty({ status: 502 }))))

const routes = Layer.mergeAll(
  HttpRouter.add("POST", "/v1/chat/completions", relay),
  HttpRouter.add("GET", "/", HttpServerResponse.text("ok"))
)

NodeRuntime.runMain(
  Layer.launch(
    HttpRouter.serve(routes, { disableLogger: true }).pipe(
      Layer.provide(
        NodeHttpServer.layer(createServer, { port: Number(process.env["PORT"] ?? 9101), host: "127.0.0.1" })
      )
    )
  )
)
