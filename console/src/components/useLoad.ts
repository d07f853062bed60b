import { useCallback, useEffect, useState } from "preact/hooks"

export type Loaded<A> =
  | { readonly state: "loading" }
  | { readonly state: "failed"; readonly error: Error }
  | { readonly state: "ready"; readonly value: A }

/** Loads `load()` whenever `deps` change; `reload` loads again (after an edit). */
export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>) => {
  const [loaded, setLoaded] = useState<Loaded<A>>({ state: "loading" })
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    let current = true
    load().then(
      (value) => current && setLoaded({ state: "ready", value }),
      (error: Error) => current && setLoaded({ state: "failed", error })
    )
    return () => {
      current = false
    }
  }, [...deps, generation])
  const reload = useCallback(() => setGeneration((n) => n + 1), [])
  return [loaded, reload] as const
}
