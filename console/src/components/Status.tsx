import type { ComponentChildren } from "preact"
import type { Loaded } from "./useLoad.ts"

/** An error the gateway gave, said where the action was. */
export const ErrorNote = ({ error }: { readonly error: Error | string | null }) =>
  error === null ? null : (
    <p class="error" role="alert">
      {typeof error === "string" ? error : error.message}
    </p>
  )

/** Shows what loaded, or that it is loading, or why it failed. */
export const Show = <A,>({
  loaded,
  children
}: {
  readonly loaded: Loaded<A>
  readonly children: (value: A) => ComponentChildren
}) =>
  loaded.state === "loading" ? (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  ) : loaded.state === "failed" ? (
    <ErrorNote error={loaded.error} />
  ) : (
    children(loaded.value)
  )
