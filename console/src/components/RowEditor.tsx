import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { request } from "../api.ts"

/**
 * Where focus goes around a row's editor: into its first field when it opens, back to the row's Edit
 * button when it closes (saved or cancelled), so keyboard and screen reader users stay on the row
 * they were working on instead of falling back to the top of the page.
 */
const useEditorFocus = (editing: boolean) => {
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

/**
 * A table row edited in a row beneath it (`EditorRow`, opened by its `EditButton`), and deleted: the
 * editor's state, the error of the last save or delete (said in the editor while it is open, in the
 * row's last cell otherwise), and what saving and deleting do before the table is read again.
 */
export const useRowEditor = (props: {
  /** The editor row's id, which the Edit button controls. */
  readonly id: string
  /** The row's resource, which Delete deletes. */
  readonly path: string
  /** Sets the editor's fields from the row, each time it opens. */
  readonly onOpen: () => void
  /** Reads the table again after a change. */
  readonly onChanged: () => Promise<void>
}) => {
  const { id, path, onOpen, onChanged } = props
  const [editing, setEditing] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const focus = useEditorFocus(editing)
  const open = () => {
    onOpen()
    setError(null)
    setEditing(true)
  }
  const close = () => {
    setEditing(false)
    setError(null)
  }
  /** The editor's submit: writes the row (a throw is its error, said in the editor), then closes. */
  const save = (write: () => Promise<unknown>) => async (event: Event) => {
    event.preventDefault()
    try {
      await write()
      // The table redrawn first, so focus goes back to the Edit button where the row now is.
      await onChanged()
      close()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  /** Deletes the row, once the person has said yes to `question`. */
  const remove = async (question: string) => {
    if (!confirm(question)) return
    try {
      await request("DELETE", path)
      await onChanged()
    } catch (failure) {
      setError((failure as Error).message)
    }
  }
  return { id, editing, error, open, close, save, remove, ...focus } as const
}

export type RowEditor = ReturnType<typeof useRowEditor>

/** The row's Edit button, which opens its editor and closes it again. */
export const EditButton = ({ editor, label }: { readonly editor: RowEditor; readonly label: string }) => (
  <button
    type="button"
    ref={editor.editButton}
    aria-label={label}
    aria-expanded={editor.editing}
    {...(editor.editing ? { "aria-controls": editor.id } : {})}
    onClick={() => (editor.editing ? editor.close() : editor.open())}
  >
    Edit
  </button>
)

/** The row's Delete button, which asks first. */
export const DeleteButton = (props: {
  readonly editor: RowEditor
  readonly label: string
  readonly question: string
}) => (
  <button type="button" class="danger" aria-label={props.label} onClick={() => props.editor.remove(props.question)}>
    Delete
  </button>
)

/** A row's own line beneath it, spanning the table, shaded like the row: its editor, or what else it opens. */
export const RowBeneath = (props: {
  readonly id: string
  readonly columns: number
  readonly children: ComponentChildren
}) => (
  <tr class="editor" id={props.id}>
    <td colSpan={props.columns}>{props.children}</td>
  </tr>
)

/** The editor, while open: a form in a row beneath the edited one, spanning the table; Escape cancels it. */
export const EditorRow = (props: {
  readonly editor: RowEditor
  /** The columns of the table, which the editor's row spans. */
  readonly columns: number
  readonly label: string
  readonly class?: string
  readonly onSubmit: (event: Event) => void
  readonly children: ComponentChildren
}) => {
  const { editor, columns, label, onSubmit, children } = props
  if (!editor.editing) return null
  return (
    <RowBeneath id={editor.id} columns={columns}>
      <form
        ref={editor.editor}
        class={props.class}
        aria-label={label}
        onSubmit={onSubmit}
        onKeyDown={(e) => e.key === "Escape" && editor.close()}
      >
        {children}
      </form>
    </RowBeneath>
  )
}

/** The editor's buttons. */
export const SaveCancel = ({ editor }: { readonly editor: RowEditor }) => (
  <>
    <button type="submit">Save</button>
    <button type="button" onClick={editor.close}>
      Cancel
    </button>
  </>
)
