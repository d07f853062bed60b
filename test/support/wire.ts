import { expect } from "vitest"
import type { Response } from "./gateway.ts"

/** The JSON the service sends, as a client sees it (written from the contract, not from the code). */
export interface ProfileJson {
  readonly id: string
  readonly externalId: string
  readonly summary: string | null
  readonly summaryVersion: number
  readonly summaryUpdatedAt: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

export interface TraitJson {
  readonly key: string
  readonly value: unknown
  readonly valueType: string
  readonly category: string
  readonly confidence: number
  readonly source: "manual" | "extracted"
  readonly createdAt: string
  readonly updatedAt: string
}

export interface MemoryJson {
  readonly id: string
  readonly content: string
  readonly type: "fact" | "preference" | "event" | "context"
  readonly importance: number
  readonly decayFactor: number
  readonly createdAt: string
  readonly lastAccessedAt: string | null
  readonly cues: ReadonlyArray<string>
  readonly occurredAt: string | null
  readonly supersededBy: string | null
}

export interface ErrorJson {
  readonly error: {
    readonly message: string
    readonly type: string
    readonly code: string
    readonly param: string | null
  }
}

const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

export const expectIsoTimestamp = (value: unknown) => expect(value).toMatch(isoTimestamp)

/** Asserts the OpenAI error shape, the status and the code; returns the message. */
export const expectError = (response: Response<unknown>, status: number, code: string): string => {
  expect({ status: response.status, body: response.body }).toMatchObject({ status, body: { error: { code } } })
  const { error } = response.body as ErrorJson
  expect(Object.keys(error).sort()).toEqual(["code", "message", "param", "type"])
  expect(typeof error.message).toBe("string")
  expect(error.message.length).toBeGreaterThan(0)
  return error.message
}
