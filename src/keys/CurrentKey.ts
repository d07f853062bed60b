import { Context } from "effect"
import type { VirtualKeyGrant } from "./VirtualKeys.ts"

/**
 * The key held in the database that admitted the current request (set by the server middleware):
 * the creator of the keys the request creates, and the provider key its requests go with.
 * `undefined` for the environment's keys and open paths: the root, which answers to no other key.
 */
export const CurrentKey = Context.Reference<VirtualKeyGrant | undefined>("gateway/keys/CurrentKey", {
  defaultValue: () => undefined
})
