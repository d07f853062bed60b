import { type CategoryRow, FIELD, invalidIf, MAX_DESCRIPTION_LENGTH, nextRow } from "./settingsForm.ts"

const HINT = "settings-categories-hint"

/**
 * The namespace's memory categories, a row each (name and description), added and removed; none: its
 * memories have no category. A name the gateway refuses is said by its refusal (the form sends it as typed).
 */
export const CategoriesField = (props: {
  readonly categories: ReadonlyArray<CategoryRow>
  /** The id of the field a refusal names. */
  readonly invalid: string | null
  readonly onChange: (categories: ReadonlyArray<CategoryRow>) => void
}) => {
  const { categories, invalid, onChange } = props
  const change = (row: number, field: "name" | "description", value: string) =>
    onChange(categories.map((category) => (category.row === row ? { ...category, [field]: value } : category)))
  const add = () => {
    onChange([...categories, { row: nextRow(), name: "", description: "" }])
    // The new row's name, once drawn.
    requestAnimationFrame(() => document.getElementById(FIELD.categoryName(categories.length))?.focus())
  }
  const remove = (index: number) => {
    onChange(categories.filter((_, i) => i !== index))
    // Focus stays in the list: on the row that took its place, else the Add button.
    requestAnimationFrame(() =>
      (
        document.getElementById(FIELD.categoryName(Math.min(index, categories.length - 2))) ??
        document.getElementById("settings-add-category")
      )?.focus()
    )
  }
  return (
    <fieldset
      id={FIELD.categories}
      class={invalid === FIELD.categories ? "settings-group invalid" : "settings-group"}
      aria-describedby={invalid === FIELD.categories ? `${HINT} ${FIELD.error}` : HINT}
    >
      <legend>Memory categories</legend>
      <p class="muted" id={HINT}>
        The categories the namespace's memories are sorted into, each with what belongs in it (for the extraction
        model). Names: 1–64 letters, digits or <code>_ . : / -</code>, each once. None: memories have no category.
      </p>
      {categories.length === 0 ? (
        <p class="muted">No categories.</p>
      ) : (
        <ol class="categories">
          {categories.map((category, index) => (
            <li key={category.row} class="row" data-category={index}>
              <label>
                <span>
                  Name<span class="visually-hidden"> of category {index + 1}</span>
                </span>
                <input
                  {...invalidIf(invalid, FIELD.categoryName(index))}
                  required
                  maxLength={64}
                  autocapitalize="off"
                  spellcheck={false}
                  value={category.name}
                  onInput={(e) => change(category.row, "name", e.currentTarget.value)}
                />
              </label>
              <label class="grow">
                <span>
                  Description<span class="visually-hidden"> of category {index + 1}</span>
                </span>
                <input
                  {...invalidIf(invalid, FIELD.categoryDescription(index))}
                  maxLength={MAX_DESCRIPTION_LENGTH}
                  value={category.description}
                  onInput={(e) => change(category.row, "description", e.currentTarget.value)}
                />
              </label>
              <button type="button" class="danger" onClick={() => remove(index)}>
                Remove<span class="visually-hidden"> category {index + 1}</span>
              </button>
            </li>
          ))}
        </ol>
      )}
      <button type="button" id="settings-add-category" onClick={add}>
        Add category
      </button>
    </fieldset>
  )
}
