/**
 * An S3-compatible server for the tests: s3rver in this process on a free loopback port, its
 * files in a temporary directory, one bucket, and a log of the requests it answered.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { createServer, type Socket } from "node:net"
import S3rver from "s3rver"
import type * as S3BlobStore from "../../src/S3BlobStore.js"

export const BUCKET = "wagate-test"

export interface Request {
  readonly method: string
  readonly url: string
  readonly contentLength: number | undefined
}

export class S3Server extends Context.Tag("test/S3Server")<S3Server, {
  readonly endpoint: string
  /** Requests in arrival order; tests read it, never reset it (filter by key instead). */
  readonly requests: ReadonlyArray<Request>
}>() {}

export const layer = Layer.scoped(
  S3Server,
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const directory = yield* fs.makeTempDirectoryScoped({ prefix: "wagate-s3rver-" })
    const server = new S3rver({
      address: "127.0.0.1",
      port: 0,
      silent: true,
      directory,
      configureBuckets: [{ name: BUCKET }]
    })
    const address = yield* Effect.acquireRelease(
      Effect.promise(() => server.run()),
      () =>
        Effect.promise(() => {
          // Keep-alive sockets of the SDK and of fetch would hold close() open.
          server.httpServer.closeAllConnections()
          return server.close()
        })
    )
    const requests: Array<Request> = []
    server.httpServer.on("request", (req) => {
      const length = req.headers["content-length"]
      requests.push({
        method: req.method ?? "",
        url: req.url ?? "",
        contentLength: length === undefined ? undefined : Number(length)
      })
    })
    return { endpoint: `http://127.0.0.1:${address.port}`, requests }
  })
).pipe(Layer.provide(NodeFileSystem.layer))

/** Store options for the test server (s3rver knows one key pair: S3RVER / S3RVER). */
export const options = (endpoint: string): S3BlobStore.Options => ({
  endpoint,
  region: "us-east-1",
  bucket: BUCKET,
  accessKeyId: Redacted.make("S3RVER"),
  secretAccessKey: Redacted.make("S3RVER"),
  forcePathStyle: true
})

/** A loopback port nothing listens on. */
export const closedPort = Effect.async<number>((resume) => {
  const probe = createServer()
  probe.listen(0, "127.0.0.1", () => {
    const address = probe.address()
    probe.close(() => resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0)))
  })
})

/** A loopback port that accepts connections and never answers, for the scope. */
export const silentPort: Effect.Effect<number, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly close: () => void }>((resume) => {
      const sockets = new Set<Socket>()
      const server = createServer((socket) => void sockets.add(socket))
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed({
          port: typeof address === "object" && address !== null ? address.port : 0,
          close: () => {
            for (const socket of sockets) socket.destroy()
            server.close()
          }
        }))
      })
    }),
    (server) => Effect.sync(server.close)
  ),
  (server) => server.port
)

/** A loopback port that accepts connections and drops each at once, counting them, for the scope. */
export const droppingPort: Effect.Effect<
  { readonly port: number; readonly connections: () => number },
  never,
  Scope.Scope
> = Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly connections: () => number; readonly close: () => void }>(
      (resume) => {
        let connections = 0
        const server = createServer((socket) => {
          connections++
          socket.destroy()
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed({
            port: typeof address === "object" && address !== null ? address.port : 0,
            connections: () => connections,
            close: () => void server.close()
          }))
        })
      }
    ),
    (server) => Effect.sync(server.close)
  )
