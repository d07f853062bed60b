/** Reads the Prometheus text format `/metrics` answers: sample name, labels and value. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** `/metrics` as read at one moment. */
export interface Reading {
  readonly at: number
  readonly samples: ReadonlyArray<Sample>
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export const parseMetrics = (text: string): ReadonlyArray<Sample> =>
  text.split("\n").flatMap((line) => {
    if (line.startsWith("#")) return []
    const match = LINE.exec(line)
    if (match === null) return []
    const labels: Record<string, string> = {}
    for (const [, name, value] of (match[2] ?? "").matchAll(LABEL)) labels[name!] = value!.replace(/\\(.)/g, "$1")
    const value = Number(match[3])
    return Number.isNaN(value) ? [] : [{ name: match[1]!, labels, value }]
  })

/** The sum of a metric's samples whose labels include `where`. */
export const total = (samples: ReadonlyArray<Sample>, name: string, where: Readonly<Record<string, string>> = {}) =>
  samples
    .filter(
      (sample) => sample.name === name && Object.entries(where).every(([key, value]) => sample.labels[key] === value)
    )
    .reduce((sum, sample) => sum + sample.value, 0)
