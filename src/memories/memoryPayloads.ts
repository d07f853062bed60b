import { Effect } from "effect"
import { instantOf } from "../domain/Memory.ts"
import { BadRequest } from "../http/OpenAiError.ts"
import {
  type ImportedMemory as ImportedMemoryBody,
  type MemoryChangesBody,
  MemoryCreated,
  MemoryFound
} from "./MemoriesApi.ts"
import type { ImportedMemory, MemoryChanges, WrittenMemory } from "./MemoriesRepo.ts"

/** The bodies of the memory routes (a user's and a namespace's shared ones) as the service takes them: times in ms. */

export const optionalInstant = (text: string | undefined) => (text === undefined ? undefined : instantOf(text))
/** `null` stays: a time cleared, an expiry set to never. */
const nullableInstant = (text: string | null | undefined) => (text === null ? null : optionalInstant(text))

export const memoryOfBody = (body: typeof ImportedMemoryBody.Type): ImportedMemory => ({
  ...body,
  occurredAt: optionalInstant(body.occurredAt),
  createdAt: optionalInstant(body.createdAt),
  expiresAt: nullableInstant(body.expiresAt)
})

const changesOfBody = (body: MemoryChangesBody): MemoryChanges => ({
  ...body,
  occurredAt: nullableInstant(body.occurredAt),
  expiresAt: nullableInstant(body.expiresAt)
})

/** The changes of a body, unless it changes nothing: 400 then. */
export const changesOf = (body: MemoryChangesBody): Effect.Effect<MemoryChanges, BadRequest> => {
  const changes = changesOfBody(body)
  return Object.values(changes).every((value) => value === undefined)
    ? Effect.fail(
        BadRequest.of(
          "invalid_request_body",
          "Nothing to change: give content, cues, type, importance, occurredAt, tags, metadata, category or expiresAt"
        )
      )
    : Effect.succeed(changes)
}

/** A write's answer: 201 with the memory stored, or 200 with the one there was already. */
export const writtenAnswer = ({ created, memory }: WrittenMemory) =>
  created ? new MemoryCreated({ memory }) : new MemoryFound({ memory })
