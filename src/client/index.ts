/**
 * `profile-memory-gateway/client`: a typed client of the management API (profiles, traits, memories,
 * keys, jobs, webhooks, …), for Effect programs (`GatewayClient`) and for Promise code
 * (`createGatewayClient`).
 */

export { BadRequest, Conflict, Forbidden, NotFound } from "../http/OpenAiError.ts"
export {
  createGatewayClient,
  type GatewayApiClient,
  GatewayClient,
  type GatewayClientOptions,
  type GatewayPromiseClient
} from "./GatewayClient.ts"
