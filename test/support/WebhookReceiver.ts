/**
 * A real HTTP receiver of webhooks for tests, on a free loopback port. Each path is a receiver
 * of its own whose answer the test chooses: a status (200, 500, 410...), hanging without an
 * answer, closing the connection, or a 200 whose body never ends. Every request that arrives is
 * kept, answered or not.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createServer, type IncomingHttpHeaders } from "node:http"

/** `partial`: 200 with `Content-Length: 100`, then 7 bytes, and the connection held open. */
export type Answer = number | "hang" | "close" | "partial"

export interface Received {
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
  readonly json: any
  /** Wall-clock ms when the whole request had arrived. */
  readonly at: number
  /** The sender's port: requests with the same one came on the same connection. */
  readonly remotePort: number
}

export interface Receiver {
  /** The URL of a path on this receiver. */
  readonly url: (path: string) => string
  /** How a path answers from now on: one answer, or one per request (n counts from 1). Default 200. */
  readonly answer: (path: string, answer: Answer | ((n: number) => Answer)) => void
  readonly received: (path: string) => ReadonlyArray<Received>
  /** Waits (real time) until `path` has received at least `count` requests. */
  readonly waitFor: (path: string, count: number, timeoutMs?: number) => Effect.Effect<ReadonlyArray<Received>>
}

const flat = (headers: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v ?? ""]))

export const start: Effect.Effect<Receiver, never, Scope.Scope> = Effect.gen(function*() {
  const answers = new Map<string, Answer | ((n: number) => Answer)>()
  const log = new Map<string, Array<Received>>()
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0]!
      const body = Buffer.concat(chunks).toString("utf8")
      let json: unknown = undefined
      try {
        json = JSON.parse(body)
      } catch {
        // kept as text
      }
      const list = log.get(path) ?? []
      list.push({ path, headers: flat(req.headers), body, json, at: Date.now(), remotePort: req.socket.remotePort ?? 0 })
      log.set(path, list)
      const rule = answers.get(path) ?? 200
      const answer = typeof rule === "function" ? rule(list.length) : rule
      if (answer === "hang") return
      if (answer === "close") return void req.socket.destroy()
      if (answer === "partial") return void res.writeHead(200, { "content-length": "100" }).write("partial")
      res.writeHead(answer, { "content-type": "text/plain" }).end(answer >= 200 && answer < 300 ? "ok" : "no")
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as { port: number }).port)))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  const received = (path: string) => [...(log.get(path) ?? [])]
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    answer: (path, answer) => void answers.set(path, answer),
    received,
    waitFor: (path, count, timeoutMs = 10_000) =>
      Effect.gen(function*() {
        const deadline = Date.now() + timeoutMs
        while (received(path).length < count) {
          if (Date.now() > deadline) {
            return yield* Effect.dieMessage(`${path} received ${received(path).length} requests, not ${count}, in ${timeoutMs} ms`)
          }
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
        }
        return received(path)
      })
  }
})
