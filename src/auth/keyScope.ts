/**
 * What a path needs: `public` paths need no key (probes, the API's documentation, and the console's
 * page and scripts, which hold no data: everything it shows comes from `/api` with the admin key);
 * `app` paths (the OpenAI-compatible proxy, `/mcp`) take app keys; every other path, known or not
 * (`/api`, `/metrics`), takes an admin key, so a route added later is never exposed to app keys by accident.
 */
export type PathScope = "public" | "app" | "admin"

const PUBLIC_PATHS = new Set(["/health", "/ready", "/openapi.json", "/docs", "/"])
const PUBLIC_PREFIXES = ["/console"]

const APP_PREFIXES = ["/v1", "/mcp"]

const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`)

export const scopeOfPath = (path: string): PathScope =>
  PUBLIC_PATHS.has(path) || PUBLIC_PREFIXES.some((prefix) => under(path, prefix))
    ? "public"
    : APP_PREFIXES.some((prefix) => under(path, prefix))
      ? "app"
      : "admin"

/** The management API: limited per client. */
export const isManagementPath = (path: string) => under(path, "/api")
