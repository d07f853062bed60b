import type { AddressInfo } from "node:net"
import { createConnection, createServer, type Socket } from "node:net"

export interface LatencyProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  readonly url: string
  readonly close: () => Promise<void>
}

/**
 * A TCP proxy in front of PostgreSQL that delays every answer of the server by `delayMs`, in order:
 * a database in another zone, for tests of what replicas see when results arrive late.
 */
export const startLatencyProxy = async (databaseUrl: string, delayMs: number): Promise<LatencyProxy> => {
  const target = new URL(databaseUrl)
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) })
    sockets.add(client)
    sockets.add(upstream)
    client.pipe(upstream)
    // Each chunk leaves delayMs after it arrived; timers of equal delay fire in the order they were set.
    upstream.on("data", (chunk: Buffer) => {
      setTimeout(() => {
        if (!client.destroyed) client.write(chunk)
      }, delayMs)
    })
    const end = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on("close", end)
    upstream.on("close", () => setTimeout(end, delayMs))
    client.on("error", end)
    upstream.on("error", end)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = new URL(databaseUrl)
  url.hostname = "127.0.0.1"
  url.port = String((server.address() as AddressInfo).port)
  return {
    url: url.toString(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
