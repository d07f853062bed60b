import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { GatewayLive } from "./Gateway.ts"
import { NodeServerLive } from "./http/HttpServerLive.ts"

NodeRuntime.runMain(Layer.launch(GatewayLive(NodeServerLive)))
