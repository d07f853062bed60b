import { HttpServerResponse } from "effect/http"

/** Where the MCP server is served (`McpRoutes`). */
export const MCP_PATH = "/mcp"

/**
 * The MCP server's own refusals of a request without a usable session are empty 400s and 404s.
 * Streamable HTTP clients act on the status (on a 404 for their `Mcp-Session-Id` they must start a
 * new session), but a body helps the people reading them: a JSON-RPC error that says what is wrong.
 * A session lives in the replica that started it, so behind a load balancer without affinity an
 * unknown session is the usual sign that the request reached another replica.
 */
export const sessionRefusal = (
  status: number,
  sessionId: string | undefined
): HttpServerResponse.HttpServerResponse | undefined => {
  if (status === 404 && sessionId !== undefined) {
    return jsonRpcError(
      404,
      -32001,
      "Session not found: this server does not know the Mcp-Session-Id (it ended, the gateway " +
        "restarted, or another replica started it); send a new initialize request without it"
    )
  }
  if (status === 400 && sessionId === undefined) {
    return jsonRpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required (send initialize first)")
  }
  return undefined
}

const jsonRpcError = (status: number, code: number, message: string) =>
  HttpServerResponse.jsonUnsafe({ jsonrpc: "2.0", id: null, error: { code, message } }, { status })
