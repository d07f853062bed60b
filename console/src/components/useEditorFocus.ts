import { useEffect, useRef } from "preact/hooks"

/**
 * Where focus goes around a row's editor: into its first field when it opens, back to the row's Edit
 * button when it closes (saved or cancelled), so keyboard and screen reader users stay on the row
 * they were working on instead of falling back to the top of the page.
 */
export const useEditorFocus = (editing: boolean) => {
  const editButton = useRef<HTMLButtonElement>(null)
  const editor = useRef<HTMLFormElement>(null)
  const opened = useRef(false)
  useEffect(() => {
    if (editing) {
      opened.current = true
      editor.current?.querySelector<HTMLElement>("input, select, textarea")?.focus()
    } else if (opened.current) {
      opened.current = false
      editButton.current?.focus()
    }
  }, [editing])
  return { editButton, editor } as const
}
