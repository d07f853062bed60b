// What of a provider's answer head the relay passes on, and where a provider is.

/** Response headers that describe the hop, not the answer. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "content-encoding",
  "set-cookie",
  "proxy-authenticate",
  "trailer",
  "upgrade"
])

/** Provider headers relayed with an error (the rest describe a body we replace). */
export const ERROR_HEADERS =
  /^(retry-after|retry-after-ms|x-request-id|request-id|x-ratelimit-.*|anthropic-ratelimit-.*)$/

/**
 * Response headers of the connection, not the answer, dropped from a passed-through answer; its
 * length and encoding stay, since its bytes are relayed as sent. Provider cookies (e.g. a CDN's)
 * belong to the provider's host, not the gateway's.
 */
export const PASSTHROUGH_HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "proxy-authenticate",
  "trailer",
  "upgrade",
  "set-cookie"
])

export const relayHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_HEADERS.has(name)) out[name] = value
  }
  return out
}

/** `https://host:port/v1` → origin `https://host:port`, prefix `/v1`. */
export const splitBaseUrl = (baseUrl: string) => {
  const url = new URL(baseUrl)
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, "") }
}
