import { useCallback, useEffect, useRef, useState } from "preact/hooks"

export type Loaded<A> =
  | { readonly state: "loading" }
  | { readonly state: "failed"; readonly error: Error }
  | { readonly state: "ready"; readonly value: A }

/**
 * Loads `load()` whenever `deps` change; `reload` loads again (after an edit) and resolves once the new
 * value is shown, so an editor can wait for its row to be redrawn before it hands focus back.
 */
export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>) => {
  const [loaded, setLoaded] = useState<Loaded<A>>({ state: "loading" })
  const [generation, setGeneration] = useState(0)
  const waiting = useRef<Array<() => void>>([])
  useEffect(() => {
    let current = true
    const settle = () => {
      for (const resolve of waiting.current.splice(0)) resolve()
    }
    load().then(
      (value) => {
        if (!current) return
        setLoaded({ state: "ready", value })
        settle()
      },
      (error: Error) => {
        if (!current) return
        setLoaded({ state: "failed", error })
        settle()
      }
    )
    return () => {
      current = false
    }
  }, [...deps, generation])
  const reload = useCallback(
    () =>
      new Promise<void>((resolve) => {
        waiting.current.push(resolve)
        setGeneration((n) => n + 1)
      }),
    []
  )
  return [loaded, reload] as const
}
