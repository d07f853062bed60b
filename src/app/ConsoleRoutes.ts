import { createHash } from "node:crypto"
import { readdir, readFile } from "node:fs/promises"
import { extname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"

/** Where `npm run build:console` puts the console (`console/build.ts`). */
export const CONSOLE_DIR = fileURLToPath(new URL("../../console/dist/", import.meta.url))
export const CONSOLE_PATH = "/console"

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json"
}

/**
 * The console's pages load nothing from elsewhere and are framed nowhere; everything they show
 * comes from this gateway's `/api` and `/metrics`, with the key typed at sign-in.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
}

/** The built files, read once at start (a few hundred KB): served from memory, by name only, so no path reaches the disk. */
const loadAssets = Effect.promise(async () => {
  const assets = new Map<string, Asset>()
  const names = await readdir(CONSOLE_DIR).catch(() => [])
  for (const name of names) {
    const contentType = CONTENT_TYPES[extname(name)]
    if (contentType === undefined) continue
    const body = new Uint8Array(await readFile(join(CONSOLE_DIR, name)))
    assets.set(name, {
      body,
      contentType,
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`
    })
  }
  return assets
})

const notBuilt = HttpServerResponse.text(
  "The console is not built. Run `npm run build:console` (npm ci does it) and restart the gateway.\n",
  { status: 503, headers: { "cache-control": "no-store" } }
)

/**
 * The web console: `/` leads to it; `/console/` is its page and `/console/<file>` its scripts and
 * styles. The files hold no data and need no key (a browser cannot send one when it opens a page):
 * the console asks for the admin key and sends it with every call to `/api`. Revalidated on every
 * load (`no-cache` with an ETag), so a new release is picked up at once.
 */
export const ConsoleRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const assets = yield* loadAssets
    const serve = (name: string) =>
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        const asset = assets.get(name)
        if (asset === undefined) return name === "index.html" ? notBuilt : HttpServerResponse.empty({ status: 404 })
        const headers = { ...SECURITY_HEADERS, etag: asset.etag, "cache-control": "no-cache" }
        if (request.headers["if-none-match"] === asset.etag) return HttpServerResponse.empty({ status: 304, headers })
        return HttpServerResponse.uint8Array(asset.body, { contentType: asset.contentType, headers })
      })

    yield* router.add("GET", "/", Effect.succeed(HttpServerResponse.redirect(`${CONSOLE_PATH}/`)))
    // One route for `/console`, `/console/` and the files (the page names them by absolute path). The
    // built files have plain names: the path is looked up as it came, never decoded or joined.
    yield* router.add(
      "GET",
      `${CONSOLE_PATH}/*`,
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const name = request.url.split("?")[0]!.slice(CONSOLE_PATH.length + 1)
        return serve(name === "" ? "index.html" : name)
      })
    )
  })
)
