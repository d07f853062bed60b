import { useState } from "preact/hooks"

/**
 * A button's action against the API: `busy` while it runs, and the error it failed with (cleared when
 * it runs again), for the row or form that shows them.
 */
export const useAction = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Error | null>(null)
  const act = async (action: () => Promise<void>) => {
    setBusy(true)
    setError(null)
    try {
      await action()
    } catch (failure) {
      setError(failure as Error)
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, act }
}
