/**
 * A TCP proxy on loopback in front of a server (PostgreSQL), which a test can make unresponsive
 * (`freeze`: connections stay open, nothing goes through either way, new ones are accepted and
 * left waiting, as behind a network partition or a stalled server), bring back (`thaw`) or cut
 * (`cut`: every connection reset, as when the server restarts).
 */
import * as Effect from "effect/Effect"
import { connect, createServer, type Socket } from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly freeze: Effect.Effect<void>
  readonly thaw: Effect.Effect<void>
  readonly cut: Effect.Effect<void>
}

export const start = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; close: () => void }>((resume) => {
      let frozen = false
      const pairs = new Set<readonly [Socket, Socket]>()
      const server = createServer((client) => {
        const upstream = connect(target.port, target.host)
        const pair = [client, upstream] as const
        pairs.add(pair)
        const forward = (from: Socket, to: Socket) => from.on("data", (chunk) => to.write(chunk))
        forward(client, upstream)
        forward(upstream, client)
        const drop = () => {
          pairs.delete(pair)
          client.destroy()
          upstream.destroy()
        }
        client.on("error", drop).on("close", drop)
        upstream.on("error", drop).on("close", drop)
        if (frozen) (client.pause(), upstream.pause())
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as { port: number }).port
        resume(Effect.succeed({
          proxy: {
            port,
            freeze: Effect.sync(() => {
              frozen = true
              for (const [a, b] of pairs) (a.pause(), b.pause())
            }),
            thaw: Effect.sync(() => {
              frozen = false
              for (const [a, b] of pairs) (a.resume(), b.resume())
            }),
            cut: Effect.sync(() => {
              for (const [a, b] of pairs) (a.resetAndDestroy(), b.resetAndDestroy())
              pairs.clear()
            })
          },
          close: () => {
            for (const [a, b] of pairs) (a.destroy(), b.destroy())
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
