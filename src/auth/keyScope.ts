/**
 * What a path needs: `public` paths need no key (probes, the API's documentation, and the console's
 * page and scripts, which hold no data: everything it shows comes from `/api` with the admin key);
 * `app` paths (the OpenAI-compatible proxy, `/mcp`) take app keys; every other path, known or not
 * (`/api`, `/metrics`), takes an admin key, so a route added later is never exposed to app keys by
 * accident. Which path is which: `app/pathKind.ts`, which reads a path as the router does.
 */
export type PathScope = "public" | "app" | "admin"
