import type { PgClient } from "@effect/sql-pg"
import { storableText } from "../domain/storableText.ts"
import type { WritableTurn } from "./Turn.ts"

/** Most turns written by one statement: bounds the statement's size after an outage. */
const MAX_BATCH = 500

/** Most bytes of held images and files one statement carries (one turn's always go, whatever their size). */
const MAX_BATCH_HELD_BYTES = 64 * 1024 * 1024

/** Bytes of images and files a turn holds for its extraction. */
export const heldBytes = (turn: WritableTurn["turn"]) =>
  turn.messages.reduce(
    (sum, message) =>
      sum +
      (message.attachments ?? []).reduce(
        (bytes, attachment) =>
          bytes + (attachment.data?.length ?? 0) + (attachment.text?.length ?? 0) + (attachment.url?.length ?? 0),
        0
      ),
    0
  )

/** How many of the waiting turns (oldest first) the next statement writes. */
export const nextBatchSize = (waiting: ReadonlyArray<{ readonly turn: WritableTurn["turn"] }>): number => {
  let bytes = 0
  let count = 0
  for (const { turn } of waiting.slice(0, MAX_BATCH)) {
    bytes += heldBytes(turn)
    if (count > 0 && bytes > MAX_BATCH_HELD_BYTES) break
    count++
  }
  return count
}

/**
 * One statement writing a batch of turns: their messages, the images and files of their user
 * messages (`message_attachments`) and their extraction jobs, so that a turn's job exists exactly
 * when its messages do. Ids are chosen before the first attempt: a retry stores nothing twice.
 */
export const turnStatement = (sql: PgClient.PgClient, batch: ReadonlyArray<WritableTurn>) => {
  let sequence = 0
  // Messages get increasing timestamps in the order they were said, across the whole batch.
  const messages = batch.flatMap(({ turn, profileId, messageIds }) =>
    turn.messages.map((message, ord) => ({
      ...(ord === turn.messages.length - 1 && turn.tail !== undefined
        ? {
            context_hash: turn.tail.prefixHash,
            context_block: storableText(turn.tail.text),
            context_chain: turn.tail.chain,
            context_forgetting: turn.tail.forgetting
          }
        : {}),
      id: messageIds[ord],
      seq: sequence++,
      profile_id: profileId,
      role: message.role,
      content: message.content,
      tool_calls: message.toolCalls ?? null,
      tool_call_id: message.toolCallId,
      request_id: turn.requestId,
      model: turn.model,
      thread_id: turn.threadId ?? null,
      answer_id: message.answerId ?? null,
      incomplete: turn.incomplete === true
    }))
  )
  // Jobs of one batch keep the order of their turns (a profile's jobs run oldest first).
  const jobs = batch.flatMap(({ turn, profileId, messageIds, jobId }, index) =>
    jobId === null
      ? []
      : [
          {
            id: jobId,
            seq: index,
            profile_id: profileId,
            message_ids: messageIds,
            trait_definitions: turn.requestTraits,
            key_id: turn.keyId ?? null
          }
        ]
  )
  const attachments = batch.flatMap(({ turn, profileId, messageIds }) =>
    turn.messages.flatMap((message, ord) =>
      (message.attachments ?? []).map((attachment, position) => ({
        message_id: messageIds[ord],
        position,
        profile_id: profileId,
        kind: attachment.kind,
        media_type: attachment.mediaType,
        filename: attachment.filename,
        url: attachment.url,
        data: attachment.data,
        text: attachment.text,
        bytes: attachment.bytes,
        sha256: attachment.sha256
      }))
    )
  )
  return sql`
      WITH inserted AS (
        INSERT INTO messages (id, profile_id, role, content, tool_calls, tool_call_id, request_id, model, thread_id,
                              answer_id, incomplete, context_hash, context_block, context_chain, context_forgetting,
                              created_at)
        SELECT r.id, r.profile_id, r.role, r.content, r.tool_calls, r.tool_call_id, r.request_id, r.model, r.thread_id,
               r.answer_id, r.incomplete, c.hash, c.block, c.chain, c.forgetting,
               now() + r.seq * interval '1 microsecond'
        FROM jsonb_to_recordset(${sql.json(messages)})
          AS r(id uuid, seq int, profile_id uuid, role text, content text, tool_calls jsonb, tool_call_id text,
               request_id text, model text, thread_id text, answer_id text, incomplete boolean, context_hash text,
               context_block text, context_chain jsonb, context_forgetting int)
        -- A tail rendered before the profile forgot something is not stored.
        LEFT JOIN LATERAL (
          SELECT r.context_hash AS hash, r.context_block AS block,
                 ARRAY(SELECT jsonb_array_elements_text(r.context_chain)) AS chain, r.context_forgetting AS forgetting
          FROM profiles p WHERE r.context_hash IS NOT NULL AND p.id = r.profile_id
            AND p.forgetting = r.context_forgetting
        ) c ON true
        ON CONFLICT (id) DO NOTHING
      )${
        attachments.length === 0
          ? sql``
          : sql`,
      attached AS (
        INSERT INTO message_attachments (message_id, position, profile_id, kind, media_type, filename, url, data, text,
                                         bytes, sha256)
        SELECT r.message_id, r.position, r.profile_id, r.kind, r.media_type, r.filename, r.url,
               decode(r.data, 'base64'), r.text, r.bytes, r.sha256
        FROM jsonb_to_recordset(${sql.json(attachments)})
          AS r(message_id uuid, position int, profile_id uuid, kind text, media_type text, filename text, url text,
               data text, text text, bytes int, sha256 text)
        ON CONFLICT (message_id, position) DO NOTHING
      )`
      }
      INSERT INTO extraction_jobs (id, profile_id, message_ids, trait_definitions, key_id, created_at)
      SELECT r.id, r.profile_id, ARRAY(SELECT jsonb_array_elements_text(r.message_ids)::uuid), r.trait_definitions,
             r.key_id, now() + r.seq * interval '1 microsecond'
      FROM jsonb_to_recordset(${sql.json(jobs)})
        AS r(id uuid, seq int, profile_id uuid, message_ids jsonb, trait_definitions jsonb, key_id uuid)
      ON CONFLICT (id) DO NOTHING`
}
