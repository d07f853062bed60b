import { MEMORY_TYPES, type MemoryType } from "../../api.ts"
import { FIELD, invalidIf, MAX_DAYS } from "./settingsForm.ts"

const HINT = "settings-retention-hint"

const LABEL: Readonly<Record<MemoryType, string>> = {
  fact: "Fact memories",
  preference: "Preference memories",
  event: "Event memories",
  context: "Context memories"
}

/** A number of days (1 to 36,500), or empty: kept. */
const DaysInput = (props: {
  readonly id: string
  readonly label: string
  readonly value: string
  readonly invalid: string | null
  readonly onInput: (value: string) => void
}) => (
  <label>
    {props.label} (days)
    <input
      {...invalidIf(props.invalid, props.id, HINT)}
      type="number"
      inputMode="numeric"
      min={1}
      max={MAX_DAYS}
      step={1}
      placeholder="kept"
      class="days"
      value={props.value}
      onInput={(e) => props.onInput(e.currentTarget.value)}
    />
  </label>
)

/**
 * How long the namespace keeps what it learns: its recorded turns (with their stored responses), and its
 * memories by type, in days after they are written; empty: kept until deleted.
 */
export const RetentionFields = (props: {
  readonly turnsDays: string
  readonly memoryDays: Readonly<Record<MemoryType, string>>
  readonly invalid: string | null
  readonly onTurnsDays: (value: string) => void
  readonly onMemoryDays: (memoryDays: Readonly<Record<MemoryType, string>>) => void
}) => {
  const { memoryDays, invalid } = props
  return (
    <fieldset
      id={FIELD.retention}
      class={invalid === FIELD.retention ? "settings-group invalid" : "settings-group"}
      aria-describedby={invalid === FIELD.retention ? `${HINT} ${FIELD.error}` : HINT}
    >
      <legend>Retention</legend>
      <p class="muted" id={HINT}>
        Days recorded turns (with their stored responses) are kept, and days a memory of each type lives after it is
        written, 1 to {MAX_DAYS.toLocaleString("en")}. Empty: kept until deleted. A change moves the expiry of the
        namespace's memories that have none of their own; a sweep removes what has expired.
      </p>
      <div class="row">
        <DaysInput
          id={FIELD.turnsDays}
          label="Turns kept"
          value={props.turnsDays}
          invalid={invalid}
          onInput={props.onTurnsDays}
        />
        {MEMORY_TYPES.map((type) => (
          <DaysInput
            key={type}
            id={FIELD.memoryDays(type)}
            label={LABEL[type]}
            value={memoryDays[type]}
            invalid={invalid}
            onInput={(value) => props.onMemoryDays({ ...memoryDays, [type]: value })}
          />
        ))}
      </div>
    </fieldset>
  )
}
