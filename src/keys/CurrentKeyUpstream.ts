import { Context } from "effect"
import type { BoundUpstream } from "./VirtualKeys.ts"

/** The provider and key the current request's key is bound to (set by the server middleware), if any. */
export const CurrentKeyUpstream = Context.Reference<BoundUpstream | undefined>("gateway/keys/CurrentKeyUpstream", {
  defaultValue: () => undefined
})
