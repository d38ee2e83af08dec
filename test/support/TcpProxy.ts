/**
 * A TCP proxy on loopback in front of a server (PostgreSQL), which a test can make unresponsive
 * (`freeze`: connections stay open, nothing goes through either way, new ones are accepted and
 * left waiting, as behind a network partition or a stalled server), bring back (`thaw`) or cut
 * (`cut`: every connection reset, as when the server restarts), or take the server away (`down`:
 * every connection reset and each new one reset as it comes, as a server stopped, until `up`).
 * `freezeOnSend` freezes each connection as its client sends a given text, as a server that
 * stalls on one command;
 * `holdAnswersOnSend` lets such a request through whole but holds the server's answer, as a
 * server that stalls after it has taken the request; `dropOnSend` resets a connection as its
 * client sends a given text, before the server gets it; `stallOnSend` stops such a connection for
 * good, the server never getting the text, as a network path that stops mid-request; `stallSent` stops, for good, the open
 * connections whose client has sent a given text, as a server (or a network path) that stops
 * answering on one session while the others go on.
 */
import * as Effect from "effect/Effect"
import { connect, createServer, type Socket } from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly freeze: Effect.Effect<void>
  readonly thaw: Effect.Effect<void>
  readonly cut: Effect.Effect<void>
  /** Every connection reset, and each new one too until `up`. */
  readonly down: Effect.Effect<void>
  readonly up: Effect.Effect<void>
  /** How many connections `down` has reset as they came. */
  readonly refused: () => number
  /** Stops the open connections whose client has sent `text` (in its first 8 KB); how many it stopped. */
  readonly stallSent: (text: string) => Effect.Effect<number>
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
  /** From now on, stops for good a connection whose client sends `text`, which the server never gets (none: stop). */
  readonly stallOnSend: (text: string | undefined) => Effect.Effect<void>
  /** How many connections `stallOnSend` has stopped. */
  readonly stalledOnSend: () => number
}

export const start = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; close: () => void }>((resume) => {
      let frozen = false
      let refusing = false
      let refused = 0
      // What the client of each connection has sent, its first 8 KB.
      const sent = new Map<readonly [Socket, Socket], string>()
      let freezeText: string | undefined
      let frozenOnSend = 0
      let holdText: string | undefined
      let dropText: string | undefined
      let droppedOnSend = 0
      let stallText: string | undefined
      let stalledOnSend = 0
      const pairs = new Set<readonly [Socket, Socket]>()
      const stalledPairs = new Set<readonly [Socket, Socket]>()
      const server = createServer((client) => {
        if (refusing) {
          refused++
          client.on("error", () => {})
          client.resetAndDestroy()
          return
        }
        const upstream = connect(target.port, target.host)
        const pair = [client, upstream] as const
        pairs.add(pair)
        sent.set(pair, "")
        const drop = () => {
          pairs.delete(pair)
          sent.delete(pair)
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
          if (stallText !== undefined && chunk.includes(stallText)) {
            stalledOnSend++
            pairs.delete(pair)
            stalledPairs.add(pair)
            client.pause()
            upstream.pause()
            return
          }
          const before = sent.get(pair)
          if (before !== undefined && before.length < 8192) sent.set(pair, before + chunk.toString("latin1"))
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
      const cut = () => {
        for (const [a, b] of pairs) (a.resetAndDestroy(), b.resetAndDestroy())
        pairs.clear()
      }
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
            cut: Effect.sync(cut),
            down: Effect.sync(() => {
              refusing = true
              cut()
            }),
            up: Effect.sync(() => {
              refusing = false
            }),
            refused: () => refused,
            stallSent: (text) =>
              Effect.sync(() => {
                let stalled = 0
                for (const pair of pairs) {
                  if (!sent.get(pair)?.includes(text)) continue
                  // Out of `pairs`, a thaw does not bring it back; closing the proxy still does away with it.
                  pairs.delete(pair)
                  stalledPairs.add(pair)
                  pair[0].pause()
                  pair[1].pause()
                  stalled++
                }
                return stalled
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
            stallOnSend: (text) =>
              Effect.sync(() => {
                stallText = text
              }),
            stalledOnSend: () => stalledOnSend,
            droppedOnSend: () => droppedOnSend
          },
          close: () => {
            for (const [a, b] of [...pairs, ...stalledPairs]) (a.destroy(), b.destroy())
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
