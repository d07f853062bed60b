import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isPublicAddress, literalAddress, urlProblem } from "../../src/webhooks/webhookUrl.ts"

describe("which addresses a webhook may reach", () => {
  it("refuses loopback, private, link-local, shared, multicast and reserved addresses", () => {
    for (const address of [
      "127.0.0.1",
      "127.8.9.10",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "fc00::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:8.8.8.8",
      "64:ff9b::a00:1",
      "not an address"
    ])
      expect([address, isPublicAddress(address)]).toEqual([address, false])
  })

  it("allows public unicast addresses", () => {
    for (const address of [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "192.169.0.1",
      "2606:4700:4700::1111",
      "2001:4860::8888"
    ])
      expect([address, isPublicAddress(address)]).toEqual([address, true])
  })

  it("refuses IPv6 forms that carry an IPv4 loopback or private address, or reach no internet host", () => {
    for (const address of [
      // IPv4-compatible, dotted and hex, whatever they embed
      "::127.0.0.1",
      "::7f00:1",
      "::10.0.0.1",
      "::a00:1",
      "::8.8.8.8",
      "0:0:0:0:0:0:7F00:0001",
      // IPv4-mapped, and SIIT's IPv4-translated (::ffff:0:a.b.c.d)
      "::ffff:a00:1",
      "0:0:0:0:0:ffff:c0a8:101",
      "::ffff:0:7f00:1",
      "::ffff:0:127.0.0.1",
      "::ffff:0:808:808",
      // NAT64: the well-known prefix with a private IPv4, the local-use one whatever it holds
      "64:ff9b::127.0.0.1",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b:1::a00:1",
      "64:ff9b:1:ffff::808:808",
      // 6to4 with a private IPv4
      "2002:7f00:1::",
      "2002:a00:1::1",
      "2002:a9fe:a9fe::1",
      "2002:c0a8:101:1::1",
      // Teredo: a private server (bits 32–63) or client (the last 32 bits, inverted)
      "2001:0:7f00:1::",
      "2001:0:a00:1:8000:63bf:f7f7:fbfb",
      "2001:0:4136:e378:8000:63bf:80ff:fffe", // client 127.0.0.1
      "2001:0:4136:e378:8000:63bf:f5ff:fffe", // client 10.0.0.1
      // site-local, unique-local, and what is neither global unicast nor a host on the internet
      "fec0::1",
      "feff::1",
      "fc00::1",
      "fdff:ffff::1",
      "100::1",
      "2001:2::1",
      "2001:db8::1",
      "3fff::1",
      "5f00::1",
      "4000::1",
      "fe80::1%eth0"
    ])
      expect([address, isPublicAddress(address)]).toEqual([address, false])
  })

  it("lets through translators' forms of public IPv4 addresses", () => {
    for (const address of [
      "64:ff9b::8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
      "2002:0101:0101:1::1",
      // Teredo: server 65.54.227.120, client 8.8.4.4
      "2001:0:4136:e378:8000:63bf:f7f7:fbfb"
    ])
      expect([address, isPublicAddress(address)]).toEqual([address, true])
  })

  it("refuses every IPv6 form of a non-public IPv4 address, however the URL writes it", () => {
    const byte = fc.integer({ min: 0, max: 255 })
    const group = fc.integer({ min: 0, max: 0xffff })
    /** A non-public IPv4 address: a random host of one of the refused networks. */
    const privateV4 = fc
      .tuple(
        fc.constantFrom(
          [0, 8],
          [10, 8],
          [100 * 2 ** 24 + 64 * 2 ** 16, 10],
          [127, 8],
          [169 * 2 ** 24 + 254 * 2 ** 16, 16],
          [172 * 2 ** 24 + 16 * 2 ** 16, 12],
          [192 * 2 ** 24 + 168 * 2 ** 16, 16],
          [192 * 2 ** 24, 24],
          [198 * 2 ** 24 + 18 * 2 ** 16, 15],
          [224 * 2 ** 24, 4],
          [240 * 2 ** 24, 4]
        ),
        fc.integer({ min: 0, max: 2 ** 32 - 1 })
      )
      .map(([[network, prefix], host]) => {
        // a bare octet is a network's first byte (0/8, 10/8, 127/8)
        const base = network < 256 ? network * 2 ** 24 : network
        const size = 2 ** (32 - prefix)
        return base - (base % size) + (host % size)
      })
    /** Any other address: public, for the forms refused whatever they embed. */
    const v4 = fc.oneof(privateV4, fc.integer({ min: 0, max: 2 ** 32 - 1 }))
    const hex = (n: number) => n.toString(16)
    const high = (ip: number) => Math.floor(ip / 65536)
    const low = (ip: number) => ip % 65536
    const dotted = (ip: number) => [24, 16, 8, 0].map((shift) => Math.floor(ip / 2 ** shift) % 256).join(".")
    const inverted = (ip: number) => 2 ** 32 - 1 - ip
    const rest = fc.array(group, { minLength: 5, maxLength: 5 })

    const refused = (address: string) => {
      expect([address, isPublicAddress(address)]).toEqual([address, false])
      // As the URL's host: what creation and the sender read.
      const written = literalAddress(new URL(`http://[${address}]:8080/hook`).hostname)
      expect([address, written, isPublicAddress(written ?? "")]).toEqual([address, written, false])
    }

    fc.assert(
      fc.property(privateV4, rest, byte, (ip, [a = 0, b = 0, c = 0, d = 0, e = 0], flags) => {
        for (const address of [
          `::${dotted(ip)}`,
          `::${hex(high(ip))}:${hex(low(ip))}`,
          `::ffff:${dotted(ip)}`,
          `::ffff:0:${hex(high(ip))}:${hex(low(ip))}`,
          `64:ff9b::${dotted(ip)}`,
          `64:ff9b:0:0:0:0:${hex(high(ip))}:${hex(low(ip))}`,
          `64:ff9b:1:${hex(a)}:${hex(b)}:${hex(c)}:${hex(high(ip))}:${hex(low(ip))}`,
          `2002:${hex(high(ip))}:${hex(low(ip))}:${hex(a)}:${hex(b)}:${hex(c)}:${hex(d)}:${hex(e)}`,
          // Teredo with a public server (65.54.227.120) and a private client, then the other way round
          `2001:0:4136:e378:${hex(flags * 256)}:${hex(a)}:${hex(high(inverted(ip)))}:${hex(low(inverted(ip)))}`,
          `2001:0:${hex(high(ip))}:${hex(low(ip))}:${hex(flags)}:${hex(a)}:f7f7:fbfb`
        ])
          refused(address)
      })
    )
    // The compatible, mapped, SIIT and local-use NAT64 forms go nowhere public, whatever IPv4 they hold.
    fc.assert(
      fc.property(v4, group, (ip, a) => {
        for (const address of [
          `::${dotted(ip)}`,
          `::ffff:${hex(high(ip))}:${hex(low(ip))}`,
          `::ffff:0:${dotted(ip)}`,
          `64:ff9b:1:${hex(a)}::${dotted(ip)}`
        ])
          refused(address)
      })
    )
  })

  it("reads a literal address out of a URL's host", () => {
    expect(literalAddress("[::1]")).toBe("::1")
    // The URL parser rewrites a dotted IPv6 tail in hex: the check reads both.
    expect(literalAddress(new URL("http://[::127.0.0.1]/").hostname)).toBe("::7f00:1")
    expect(literalAddress("127.0.0.1")).toBe("127.0.0.1")
    expect(literalAddress("example.com")).toBeUndefined()
  })

  it("accepts plain http(s) URLs and says what is wrong with others", () => {
    expect(urlProblem("https://hooks.example.com/gateway?app=1")).toBeUndefined()
    expect(urlProblem("http://hooks.example.com:8080/x")).toBeUndefined()
    for (const url of [
      "hooks.example.com",
      "ftp://example.com",
      "javascript:alert(1)",
      "https://user:pass@example.com/",
      "https://example.com/#frag",
      `https://example.com/${"a".repeat(2000)}`
    ])
      expect(urlProblem(url)?.code).toBe("invalid_url")
  })
})
