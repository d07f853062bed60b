import { NodeRuntime } from "@effect/platform-node"
import { Cause, Exit, Layer, Runtime } from "effect"
import { GatewayLive } from "./Gateway.ts"
import { NodeServerLive } from "./http/HttpServerLive.ts"

NodeRuntime.runMain(Layer.launch(GatewayLive(NodeServerLive)), {
  // SIGTERM/SIGINT ask for a shutdown: once it has drained cleanly, that is a success.
  teardown: (exit, onExit) =>
    Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
})
