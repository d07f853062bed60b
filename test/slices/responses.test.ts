import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type { ProfileId } from "../../src/domain/Profile.ts"
import { ConversationsConfig } from "../../src/responses/ConversationsConfig.ts"
import { ConversationsRepo, jsonBytes } from "../../src/responses/ConversationsRepo.ts"
import { type StoredResponse, StoredResponsesRepo } from "../../src/responses/StoredResponsesRepo.ts"
import * as TestDatabase from "../support/database.ts"
import { newProfileId } from "../support/profileRow.ts"

const ResponsesState = Layer.mergeAll(StoredResponsesRepo.layerTest, ConversationsRepo.layerTest).pipe(
  Layer.provideMerge(TestDatabase.layer)
)

const response = (
  id: string,
  profileId: ProfileId,
  previousResponseId: string | null,
  said: string
): Omit<StoredResponse, "createdAt"> => ({
  id,
  profileId,
  previousResponseId,
  inputItems: [{ role: "user", content: said }],
  response: {
    id,
    object: "response",
    output: [{ type: "message", content: [{ type: "output_text", text: `re: ${said}` }] }]
  }
})

/** JSON whose keys are not in the order `jsonb` would keep them (shorter keys first): a reordering shows. */
const asSentItems = [
  { type: "message", role: "user", content: [{ type: "input_text", text: "Grüße aus Köln 👋" }], zeta: 1, alpha: 2 },
  { type: "function_call", name: "get_weather", call_id: "call_1", arguments: '{"city":"Köln","units":"metric"}' }
]

layer(ResponsesState, { timeout: "60 seconds" })("Kept Responses API state", (it) => {
  it.effect("keeps a response for its profile only: another profile's same id is its own", () =>
    Effect.gen(function* () {
      const responses = yield* StoredResponsesRepo
      const ada = yield* newProfileId
      const bob = yield* newProfileId
      yield* responses.keep(response("resp_1", ada, null, "Ada's question"))

      assert.deepInclude(Option.getOrThrow(yield* responses.find("resp_1", ada)), {
        profileId: ada,
        inputItems: [{ role: "user", content: "Ada's question" }]
      })
      assert.isTrue(Option.isNone(yield* responses.find("resp_1", bob)))
      assert.isTrue(Option.isNone(yield* responses.chain("resp_1", bob)))
      assert.isFalse(yield* responses.remove("resp_1", bob))

      // A provider reusing the id for another user overwrites nobody's.
      yield* responses.keep(response("resp_1", bob, null, "Bob's question"))
      assert.deepStrictEqual(Option.getOrThrow(yield* responses.find("resp_1", ada)).inputItems, [
        { role: "user", content: "Ada's question" }
      ])
      assert.isTrue(yield* responses.remove("resp_1", bob))
      assert.isTrue(Option.isSome(yield* responses.find("resp_1", ada)))
      assert.deepStrictEqual(
        (yield* responses.ofProfile(bob)).map((r) => r.id),
        []
      )
    })
  )

  it.effect("rebuilds a conversation from its chain of responses, oldest first", () =>
    Effect.gen(function* () {
      const responses = yield* StoredResponsesRepo
      const ada = yield* newProfileId
      yield* responses.keep(response("resp_a", ada, null, "one"))
      yield* responses.keep(response("resp_b", ada, "resp_a", "two"))
      yield* responses.keep(response("resp_c", ada, "resp_b", "three"))

      const chain = Option.getOrThrow(yield* responses.chain("resp_c", ada))
      assert.deepStrictEqual(
        chain.map((r) => r.id),
        ["resp_a", "resp_b", "resp_c"]
      )
      // A response removed from the middle cuts the chain there; the later ones keep their own items.
      assert.isTrue(yield* responses.remove("resp_b", ada))
      assert.deepStrictEqual(
        Option.getOrThrow(yield* responses.chain("resp_c", ada)).map((r) => r.id),
        ["resp_c"]
      )
    })
  )

  it.effect("gives a kept response back as it was sent, keys in their order", () =>
    Effect.gen(function* () {
      const responses = yield* StoredResponsesRepo
      const ada = yield* newProfileId
      const sent = { ...response("resp_bytes", ada, null, "bytes"), inputItems: asSentItems }
      yield* responses.keep(sent)
      const found = Option.getOrThrow(yield* responses.find("resp_bytes", ada))
      assert.strictEqual(JSON.stringify(found.inputItems), JSON.stringify(asSentItems))
      assert.strictEqual(JSON.stringify(found.response), JSON.stringify(sent.response))
    })
  )

  it.effect("keeps a conversation's items in order, an item with an id already there not added twice", () =>
    Effect.gen(function* () {
      const conversations = yield* ConversationsRepo
      const ada = yield* newProfileId
      const call = { id: "fc_1", type: "function_call", name: "lookup", call_id: "call_9", arguments: "{}" }
      const conversation = yield* conversations.create(ada, { topic: "trip" }, [
        { role: "user", content: "Plan my trip" },
        call
      ])
      assert.deepInclude(conversation, { object: "conversation", metadata: { topic: "trip" } })

      // A client sending back the call it was given, with the output.
      const added = yield* conversations.addItems(conversation.id, [
        call,
        { type: "function_call_output", call_id: "call_9", output: "Oslo" }
      ])
      assert.deepStrictEqual(
        added.map((item) => item["type"]),
        ["function_call_output"]
      )

      const page = yield* conversations.items(conversation.id, { order: "asc", limit: 10, after: undefined })
      assert.isFalse(page.hasMore)
      assert.deepStrictEqual(
        page.data.map((item) => item["type"]),
        ["message", "function_call", "function_call_output"]
      )
      const [message, , output] = page.data
      assert.match(String(message!["id"]), /^msg_[0-9a-f]{48}$/)
      assert.match(String(output!["id"]), /^item_[0-9a-f]{48}$/)
      assert.strictEqual(page.data[1]!["id"], "fc_1")

      const newestFirst = yield* conversations.items(conversation.id, { order: "desc", limit: 1, after: undefined })
      assert.deepStrictEqual(
        newestFirst.data.map((item) => item["id"]),
        [output!["id"]]
      )
      assert.isTrue(newestFirst.hasMore)
      const next = yield* conversations.items(conversation.id, {
        order: "desc",
        limit: 1,
        after: String(output!["id"])
      })
      assert.deepStrictEqual(
        next.data.map((item) => item["id"]),
        ["fc_1"]
      )
    })
  )

  it.effect("gives a conversation's items back to its user only, byte for byte as sent", () =>
    Effect.gen(function* () {
      const conversations = yield* ConversationsRepo
      const ada = yield* newProfileId
      const bob = yield* newProfileId
      const conversation = yield* conversations.create(ada, {}, asSentItems)

      const history = Option.getOrThrow(yield* conversations.history(conversation.id, ada))
      assert.strictEqual(JSON.stringify(history), JSON.stringify(asSentItems))

      assert.isTrue(Option.isNone(yield* conversations.history(conversation.id, bob)))
      assert.isTrue(Option.isNone(yield* conversations.find(conversation.id, bob)))
      assert.isTrue(Option.isNone(yield* conversations.update(conversation.id, bob, { stolen: true })))
      assert.isFalse(yield* conversations.remove(conversation.id, bob))
      assert.deepStrictEqual(Option.getOrThrow(yield* conversations.find(conversation.id, ada)).metadata, {})
    })
  )

  it.effect("counts a conversation's bytes against its user's share, and gives a deleted item's back", () =>
    Effect.gen(function* () {
      const conversations = yield* ConversationsRepo
      const { maxBytesPerUser } = yield* ConversationsConfig
      const ada = yield* newProfileId
      const kept = { type: "message", role: "user", content: "Grüße aus Köln" }
      const dropped = { type: "message", role: "assistant", content: "x".repeat(1000) }
      const conversation = yield* conversations.create(ada, {}, [kept, dropped])
      /** Whether `bytes` more fit the user's share. */
      const fits = (bytes: number) =>
        conversations.room(ada, { bytes, newConversation: false }).pipe(
          Effect.as(true),
          Effect.catchTag("ConversationLimitReached", (reached) => {
            assert.strictEqual(reached.limit, "bytes")
            return Effect.succeed(false)
          })
        )

      // The metadata `{}` counts its 2 bytes, each item its JSON as sent.
      const used = 2 + jsonBytes(kept) + jsonBytes(dropped)
      assert.isTrue(yield* fits(maxBytesPerUser - used))
      assert.isFalse(yield* fits(maxBytesPerUser - used + 1))

      const [, droppedItem] = (yield* conversations.items(conversation.id, {
        order: "asc",
        limit: 10,
        after: undefined
      })).data
      assert.isTrue(yield* conversations.removeItem(conversation.id, String(droppedItem!["id"])))
      assert.isFalse(yield* conversations.removeItem(conversation.id, String(droppedItem!["id"])))
      const left = used - jsonBytes(dropped)
      assert.isTrue(yield* fits(maxBytesPerUser - left))
      assert.isFalse(yield* fits(maxBytesPerUser - left + 1))
      assert.deepStrictEqual(Option.getOrThrow(yield* conversations.history(conversation.id, ada)), [kept])
    })
  )
})
