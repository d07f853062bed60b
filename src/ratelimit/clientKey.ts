import { Option, Result } from "effect"
import { IpNetwork, NetAddress } from "effect/net"

/**
 * The key a client's limits are kept under: its IPv4 address, or the /64 network of its IPv6
 * address (one host usually holds a whole /64, so single IPv6 addresses would be free to rotate).
 * Requests without a TCP peer (a socket file, an embedding test) share one key.
 */
export const clientKey = (remoteAddress: Option.Option<string>): string => {
  if (Option.isNone(remoteAddress)) return "unknown"
  const parsed = NetAddress.ipFromString(remoteAddress.value)
  if (Result.isFailure(parsed)) return remoteAddress.value
  const address = NetAddress.toCanonical(parsed.success)
  if (NetAddress.isIpv4Address(address)) return NetAddress.formatIp(address)
  const network = IpNetwork.fromAddress(address, 64)
  return Result.isSuccess(network) ? IpNetwork.format(network.success) : NetAddress.formatIp(address)
}
