import type { ComponentChildren } from "preact"

/**
 * A tab list as the ARIA pattern has it: the selected tab alone in the tab order, arrow keys (and
 * Home, End) move to the previous, next, first and last tab and select it. The panel is the caller's,
 * with the id `panelId(prefix, name)`, labelled by its tab (`tabId(prefix, name)`).
 */
export const Tabs = <Name extends string>(props: {
  readonly label: string
  /** Prefixes the ids, when a page has more than one tab list. */
  readonly prefix: string
  readonly tabs: ReadonlyArray<readonly [Name, ComponentChildren]>
  readonly selected: Name
  readonly onSelect: (name: Name) => void
}) => {
  const { label, prefix, tabs, selected, onSelect } = props
  const move = (event: KeyboardEvent) => {
    const index = tabs.findIndex(([name]) => name === selected)
    const target =
      event.key === "ArrowRight"
        ? (index + 1) % tabs.length
        : event.key === "ArrowLeft"
          ? (index - 1 + tabs.length) % tabs.length
          : event.key === "Home"
            ? 0
            : event.key === "End"
              ? tabs.length - 1
              : null
    if (target === null) return
    event.preventDefault()
    const next = tabs[target]![0]
    onSelect(next)
    document.getElementById(tabId(prefix, next))?.focus()
  }
  return (
    <div role="tablist" aria-label={label} class="tabs">
      {tabs.map(([name, content]) => (
        <button
          type="button"
          role="tab"
          id={tabId(prefix, name)}
          aria-selected={selected === name}
          aria-controls={panelId(prefix, name)}
          tabIndex={selected === name ? 0 : -1}
          onClick={() => onSelect(name)}
          onKeyDown={move}
        >
          {content}
        </button>
      ))}
    </div>
  )
}

export const tabId = (prefix: string, name: string) => `${prefix}tab-${name}`
export const panelId = (prefix: string, name: string) => `${prefix}panel-${name}`
