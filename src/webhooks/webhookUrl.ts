import { BlockList, isIP } from "node:net"

/**
 * Which addresses a webhook may reach. A webhook's URL is chosen by whoever holds a namespace's
 * admin key: without this, it could make the gateway POST into the network it runs in (its
 * database, a cloud's metadata service). Only public unicast addresses pass, unless
 * `WEBHOOK_ALLOW_PRIVATE_URLS` is set. The check runs on the URL when the webhook is created and
 * on every address the name resolves to when a delivery connects (a name may change what it points to).
 */
// Two lists: a BlockList checks an IPv4 address against its IPv6 rules too (as ::ffff:a.b.c.d).
const notPublicV4 = new BlockList()
const notPublicV6 = new BlockList()
for (const [network, prefix] of [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, broadcast
] as const)
  notPublicV4.addSubnet(network, prefix, "ipv4")
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["::ffff:0:0", 96], // IPv4-mapped: whatever it maps to is reached by its IPv4 address instead
  ["64:ff9b::", 96], // NAT64
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["ff00::", 8] // multicast
] as const)
  notPublicV6.addSubnet(network, prefix, "ipv6")

/** Whether an IP address (v4 or v6, as written by `dns.lookup`) is a public unicast one. */
export const isPublicAddress = (address: string): boolean => {
  const family = isIP(address)
  if (family === 0) return false
  return family === 4 ? !notPublicV4.check(address, "ipv4") : !notPublicV6.check(address, "ipv6")
}

/** The host as an IP address, when the URL names one (`[::1]` → `::1`); `undefined` for a name. */
export const literalAddress = (hostname: string): string | undefined => {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname
  return isIP(bare) === 0 ? undefined : bare
}

export type UrlProblem = { readonly code: string; readonly message: string }

/** What is wrong with a webhook URL as written (its addresses are checked separately); `undefined` if nothing. */
export const urlProblem = (raw: string): UrlProblem | undefined => {
  if (raw.length > 2000 || !URL.canParse(raw)) return { code: "invalid_url", message: "url must be an absolute URL" }
  const url = new URL(raw)
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return { code: "invalid_url", message: "url must be an http:// or https:// URL" }
  if (url.username !== "" || url.password !== "")
    return { code: "invalid_url", message: "url must not carry credentials (the signature authenticates deliveries)" }
  if (url.hash !== "") return { code: "invalid_url", message: "url must not have a #fragment" }
  return undefined
}
