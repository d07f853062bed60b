/**
 * `profile-memory-gateway/client`: a typed client of the management API (profiles, traits, memories,
 * keys, jobs, webhooks, …), for Effect programs (`GatewayClient`) and for Promise code
 * (`createGatewayClient`).
 */

// The management API's errors: each with its `status` and the OpenAI-shaped `error` body.
export {
  BadRequest,
  Conflict,
  Forbidden,
  InternalServerError,
  NotFound,
  PayloadTooLarge,
  ServiceUnavailable,
  Unauthorized
} from "../http/OpenAiError.ts"
export {
  createGatewayClient,
  type GatewayApiClient,
  GatewayClient,
  type GatewayClientOptions,
  type GatewayPromiseClient
} from "./GatewayClient.ts"
