// Loaded into the benchmarked gateway by `npm run bench:timeline` (NODE_OPTIONS=--import=…): notes when
// each step of a streamed chat completion happens, from Node's and undici's diagnostics channels and the
// response's first write, and writes them to TIMELINE_FILE on SIGUSR2. Nothing in the gateway changes.
import dc from "node:diagnostics_channel"
import { writeFileSync } from "node:fs"
import http from "node:http"

const CHAT = "/chat/completions"
const now = () => performance.timeOrigin + performance.now()
/** [step, epoch ms], in the order they happened. */
const steps = []
const note = (step) => steps.push([step, now()])

dc.subscribe("http.server.request.start", ({ request }) => {
  if (request.method === "POST" && request.url.endsWith(CHAT)) note("gateway.received")
})
dc.subscribe("undici:request:create", ({ request }) => {
  if (request.path.endsWith(CHAT)) note("gateway.providerCall")
})
dc.subscribe("undici:client:sendHeaders", ({ request }) => {
  if (request.path.endsWith(CHAT)) note("gateway.providerSent")
})
dc.subscribe("undici:request:headers", ({ request }) => {
  if (request.path.endsWith(CHAT)) note("gateway.providerHead")
})
const firstWrites = new WeakSet()
const write = http.ServerResponse.prototype.write
http.ServerResponse.prototype.write = function (...args) {
  if (!firstWrites.has(this) && this.req?.url?.endsWith(CHAT)) {
    firstWrites.add(this)
    note("gateway.firstWrite")
  }
  return write.apply(this, args)
}

process.on("SIGUSR2", () => {
  writeFileSync(process.env.TIMELINE_FILE, JSON.stringify(steps))
  steps.length = 0
})
