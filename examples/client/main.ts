/**
 * The typed client of the management API, from a program that does not use Effect: give a user a
 * trait and a memory, read their profile back, rank their memories for a message, and handle a
 * typed error.
 *
 *   GATEWAY_URL=http://localhost:3100 GATEWAY_ADMIN_KEY=… node examples/client/main.ts
 *
 * In an application: `import { createGatewayClient, NotFound } from "profile-memory-gateway/client"`.
 */
import { createGatewayClient, NotFound } from "../../src/client/index.ts"

const client = await createGatewayClient({
  url: process.env["GATEWAY_URL"] ?? "http://localhost:3100",
  apiKey: process.env["GATEWAY_ADMIN_KEY"]
})

// Every call is typed from the gateway's own API definition: params, payloads and answers.
await client.profiles.create({ payload: { externalId: "client-example" } })
await client.traits.put({
  params: { id: "client-example", key: "preferred_language" },
  payload: { value: "Portuguese" }
})
await client.memories.create({
  params: { id: "client-example" },
  payload: { content: "Is training for the Lisbon marathon in April", type: "event", tags: ["sport"] }
})

const { profile } = await client.profiles.get({ params: { id: "client-example" } })
console.log(`traits: ${profile.traits.map((trait) => `${trait.key}=${JSON.stringify(trait.value)}`).join(", ")}`)

const { memories } = await client.memories.search({
  params: { id: "client-example" },
  payload: { query: "How should I plan my long runs?", limit: 3 }
})
console.log(`top memory: ${memories[0]?.content ?? "(none)"}`)

// A declared error rejects as its own class, with the status and the OpenAI-shaped body.
try {
  await client.profiles.get({ params: { id: "nobody-here" } })
} catch (error) {
  if (error instanceof NotFound) console.log(`not found: ${error.status} ${error.error.code}`)
  else throw error
}
