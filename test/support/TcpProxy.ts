/**
 * A TCP proxy on loopback in front of a server (PostgreSQL), which a test can make unresponsive
 * (`freeze`: connections stay open, nothing goes through either way, new ones are accepted and
 * left waiting, as behind a network partition or a stalled server), bring back (`thaw`) or cut
 * (`cut`: every connection reset, as when the server restarts). `freezeOnSend` freezes each
 * connection as its client sends a given text, as a server that stalls on one command;
 * `holdAnswersOnSend` lets such a request through whole but holds the server's answer, as a
 * server that stalls after it has taken the request; `dropOnSend` resets a connection as its
 * client sends a given text, before the server gets it.
 */
import * as Effect from "effect/Effect"
import { connect, createServer, type Socket } from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly freeze: Effect.Effect<void>
  readonly thaw: Effect.Effect<void>
  readonly cut: Effect.Effect<void>
  /** From now on, freezes a connection as its client sends `text` (none: stop doing so). */
  readonly freezeOnSend: (text: string | undefined) => Effect.Effect<void>
  /** How many connections `freezeOnSend` has frozen. */
  readonly frozenOnSend: () => number
  /** From now on, holds a connection's answers once its client sends `text` (none: stop doing so). */
  readonly holdAnswersOnSend: (text: string | undefined) => Effect.Effect<void>
  /** From now on, resets a connection whose client sends `text`, which the server never gets (none: stop). */
  readonly dropOnSend: (text: string | undefined) => Effect.Effect<void>
  /** How many connections `dropOnSend` has reset. */
  readonly droppedOnSend: () => number
}

export const start = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; close: () => void }>((resume) => {
      let frozen = false
      let freezeText: string | undefined
      let frozenOnSend = 0
      let holdText: string | undefined
      let dropText: string | undefined
      let droppedOnSend = 0
      const pairs = new Set<readonly [Socket, Socket]>()
      const server = createServer((client) => {
        const upstream = connect(target.port, target.host)
        const pair = [client, upstream] as const
        pairs.add(pair)
        const drop = () => {
          pairs.delete(pair)
          client.destroy()
          upstream.destroy()
        }
        client.on("data", (chunk: Buffer) => {
          if (dropText !== undefined && chunk.includes(dropText)) {
            droppedOnSend++
            pairs.delete(pair)
            client.resetAndDestroy()
            upstream.destroy()
            return
          }
          upstream.write(chunk)
          // The server gets the command; its answer waits, unread, until a thaw.
          if (freezeText !== undefined && chunk.includes(freezeText)) {
            frozenOnSend++
            client.pause()
            upstream.pause()
          }
          if (holdText !== undefined && chunk.includes(holdText)) upstream.pause()
        })
        upstream.on("data", (chunk) => client.write(chunk))
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
            }),
            freezeOnSend: (text) =>
              Effect.sync(() => {
                freezeText = text
              }),
            frozenOnSend: () => frozenOnSend,
            holdAnswersOnSend: (text) =>
              Effect.sync(() => {
                holdText = text
              }),
            dropOnSend: (text) =>
              Effect.sync(() => {
                dropText = text
              }),
            droppedOnSend: () => droppedOnSend
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
