import { BlockList, isIP } from "node:net"

/**
 * Which addresses a webhook may reach. A webhook's URL is chosen by whoever holds a namespace's
 * admin key: without this, it could make the gateway POST into the network it runs in (its
 * database, a cloud's metadata service). Only public unicast addresses pass, unless
 * `WEBHOOK_ALLOW_PRIVATE_URLS` is set. The check runs on the URL when the webhook is created and
 * on every address the name resolves to when a delivery connects (a name may change what it points to).
 */
// IPv4 only: a BlockList would also check an IPv4 address against IPv6 rules (as ::ffff:a.b.c.d).
const notPublicV4 = new BlockList()
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

const ipv6Subnets = (...subnets: ReadonlyArray<readonly [string, number]>) => {
  const list = new BlockList()
  for (const [network, prefix] of subnets) list.addSubnet(network, prefix, "ipv6")
  return (address: string) => list.check(address, "ipv6")
}

/** Global unicast: the only IPv6 space routed on the internet (the rest is local, reserved or a translator's). */
const globalUnicast = ipv6Subnets(["2000::", 3])
/** Within it, what is not a host on the internet: IETF protocol assignments (benchmarking, ORCHID, …) and documentation. */
const notGlobal = ipv6Subnets(["2001::", 23], ["2001:db8::", 32], ["3fff::", 20])
/** NAT64's well-known prefix: the last 32 bits are the IPv4 address the translator connects to. */
const nat64 = ipv6Subnets(["64:ff9b::", 96])
/** 6to4: bits 16–47 are the IPv4 address of the site's router, which the packets are sent to. */
const sixToFour = ipv6Subnets(["2002::", 16])
/** Teredo: the server's IPv4 at bits 32–63, the client's (inverted) in the last 32 bits. */
const teredo = ipv6Subnets(["2001::", 32])

/** The 16 bytes of an IPv6 address as `isIP` accepts it (without a zone). */
const ipv6Bytes = (address: string): Uint8Array => {
  const groups = (part: string): Array<number> =>
    part === ""
      ? []
      : part.split(":").flatMap((group) => {
          if (!group.includes(".")) return [Number.parseInt(group, 16)]
          const [a = 0, b = 0, c = 0, d = 0] = group.split(".").map(Number)
          return [(a << 8) | b, (c << 8) | d]
        })
  const [head = "", tail] = address.split("::")
  const before = groups(head)
  const after = tail === undefined ? [] : groups(tail)
  const all = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after]
  return Uint8Array.from(all.flatMap((group) => [group >> 8, group & 0xff]))
}

/** The IPv4 address in 4 bytes of `bytes` from `offset`, each inverted with `mask` (Teredo's client). */
const ipv4At = (bytes: Uint8Array, offset: number, mask = 0) =>
  Array.from(bytes.subarray(offset, offset + 4), (byte) => byte ^ mask).join(".")

const isPublicV4 = (address: string) => !notPublicV4.check(address, "ipv4")

/**
 * An IPv6 address is public when it is global unicast, or when it is the NAT64, 6to4 or Teredo form
 * of public IPv4 addresses: those reach the IPv4 address they embed, so it is what is checked.
 * Everything else is refused, among it the IPv4-compatible (`::a.b.c.d`), IPv4-mapped (`::ffff:…`)
 * and SIIT (`::ffff:0:…`) forms whatever they embed (a public receiver is written with its IPv4
 * address instead), NAT64's local-use prefix `64:ff9b:1::/48` (where the IPv4 sits in it is the
 * operator's choice), unique-local `fc00::/7`, site-local `fec0::/10`, link-local and multicast.
 */
const isPublicV6 = (withZone: string): boolean => {
  const [address = ""] = withZone.split("%") // a zone (`%eth0`) says which interface, not where to
  if (nat64(address)) return isPublicV4(ipv4At(ipv6Bytes(address), 12))
  if (!globalUnicast(address)) return false
  if (sixToFour(address)) return isPublicV4(ipv4At(ipv6Bytes(address), 2))
  if (teredo(address)) {
    const bytes = ipv6Bytes(address)
    return isPublicV4(ipv4At(bytes, 4)) && isPublicV4(ipv4At(bytes, 12, 0xff))
  }
  return !notGlobal(address)
}

/** Whether an IP address (v4 or v6, as written by `dns.lookup`) is a public unicast one. */
export const isPublicAddress = (address: string): boolean => {
  const family = isIP(address)
  if (family === 0) return false
  return family === 4 ? isPublicV4(address) : isPublicV6(address)
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
