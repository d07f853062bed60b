/**
 * Starts the gateway (what `profile-memory-gateway start` does): the entry point of the container
 * image and of the tests' and benchmarks' service processes.
 */
import { NodeRuntime } from "@effect/platform-node"
import { serve, serveTeardown } from "./app/serve.ts"

NodeRuntime.runMain(serve, { disableErrorReporting: true, teardown: serveTeardown })
