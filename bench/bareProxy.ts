/**
 * Arm B of the benchmark: the floor for "a Node hop that rewrites the body". node:http in,
 * parse the JSON, prepend a ~100-character system message, forward through a keep-alive undici
 * pool, relay status and body with backpressure, abort upstream when the client goes away.
 *
 *   UPSTREAM=http://127.0.0.1:9000 PORT=9100 node bench/bareProxy.ts
 */
import { createServer } from "node:http"
import { Pool } from "undici"

const upstream = new Pool(process.env["UPSTREAM"] ?? "http://127.0.0.1:9000", { connections: 256, pipelining: 1 })
const MEMORY = "Background about the user: prefers short answers, works as a data engineer, lives in Lyon."
const MAX_BODY = 1024 * 1024

const server = createServer((req, res) => {
  const parts: Array<Buffer> = []
  let size = 0
  req.on("data", (part: Buffer) => {
    size += part.length
    if (size > MAX_BODY) req.destroy()
    else parts.push(part)
  })
  req.on("end", () => {
    let body: { messages?: Array<unknown> }
    try {
      body = JSON.parse(Buffer.concat(parts).toString("utf8"))
    } catch {
      res.writeHead(400).end()
      return
    }
    body.messages = [{ role: "system", content: MEMORY }, ...(body.messages ?? [])]
    const abort = new AbortController()
    res.on("close", () => {
      if (!res.writableFinished) abort.abort()
    })
    upstream
      .request({
        method: "POST",
        path: req.url ?? "/",
        headers: { "content-type": "application/json", authorization: "Bearer bench" },
        body: JSON.stringify(body),
        signal: abort.signal
      })
      .then(
        ({ body: upstreamBody, headers, statusCode }) => {
          res.writeHead(statusCode, { "content-type": String(headers["content-type"] ?? "application/json") })
          upstreamBody.on("data", (part: Buffer) => {
            if (!res.write(part)) {
              upstreamBody.pause()
              res.once("drain", () => upstreamBody.resume())
            }
          })
          upstreamBody.on("end", () => res.end())
          upstreamBody.on("error", () => res.destroy())
        },
        () => {
          if (!res.headersSent) res.writeHead(502)
          res.end()
        }
      )
  })
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env["PORT"] ?? 9100), "127.0.0.1", () => process.send?.("ready"))
