import { DateTime } from "effect"
import { describe, expect, it } from "vitest"
import { renderFields, renderTable, renderTime } from "../../src/cli/table.ts"

interface Row {
  readonly user: string
  readonly count: number
}

const columns = [
  { header: "USER", cell: (row: Row) => row.user, maxWidth: 10 },
  { header: "COUNT", cell: (row: Row) => String(row.count), align: "right" as const }
]

describe("the CLI's tables", () => {
  it("aligns columns under their headers, numbers to the right", () => {
    expect(
      renderTable(columns, [
        { user: "ana", count: 3 },
        { user: "benedict", count: 120 }
      ])
    ).toBe(["USER      COUNT", "ana           3", "benedict    120"].join("\n"))
  })

  it("keeps each row on one line and cuts long cells, counting characters rather than UTF-16 units", () => {
    const table = renderTable(columns, [{ user: "José\nMaría\tLópez-Ñúñez", count: 1 }])
    expect(table.split("\n")).toEqual(["USER        COUNT", "José Marí…      1"])
    expect(renderTable(columns, [{ user: "🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂", count: 1 }]).split("\n")[1]).toBe(
      "🙂🙂🙂🙂🙂🙂🙂🙂🙂…      1"
    )
  })

  it("says so when there is nothing to show", () => {
    expect(renderTable(columns, [], "No profiles.")).toBe("No profiles.")
  })

  it("renders fields and times for people", () => {
    expect(
      renderFields([
        ["user", "ana"],
        ["namespace", "default"]
      ])
    ).toBe("user:      ana\nnamespace: default")
    expect(renderTime(DateTime.makeUnsafe("2026-11-26T14:21:51.953Z"))).toBe("2026-11-26T14:21:51Z")
    expect(renderTime(null)).toBe("—")
  })
})
