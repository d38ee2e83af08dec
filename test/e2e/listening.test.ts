/**
 * The gateway announces its address once it answers there; a port another process holds ends
 * the start at once, before the database is opened, with a message that names the port.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdtempSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually } from "../support/Fixtures.js"
import { freePort } from "../support/Ports.js"
import { exited, spawnGateway } from "./support/GatewayProcess.js"

const embedded = (dataDir: string, port: number) => ({
  DATA_DIR: dataDir,
  HTTP_HOST: "127.0.0.1",
  HTTP_PORT: String(port),
  WA_DRIVER: "simulator"
})

const freshDataDir = () => join(mkdtempSync(join(tmpdir(), "wagate-listen-")), "data")

describe("the gateway's address", () => {
  it.scopedLive("is announced once the gateway answers on it", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const gateway = yield* spawnGateway(embedded(freshDataDir(), port))
      yield* eventually(
        Effect.sync(gateway.output),
        (output) => output.includes("wagate all on") || gateway.child.exitCode !== null,
        180_000
      )
      assert.include(gateway.output(), `wagate all on http://127.0.0.1:${port}`)
      const status = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/api/status`).then((r) => r.status, (e) => String(e.cause ?? e))
      )
      assert.strictEqual(status, 200)
    }), { timeout: 240_000 })

  it.scopedLive("taken by another process ends the start with the port named, before the database opens", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      yield* Effect.acquireRelease(
        Effect.async<ReturnType<typeof createServer>>((resume) => {
          const server = createServer()
          server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const dataDir = freshDataDir()
      const gateway = yield* spawnGateway(embedded(dataDir, port))
      const { code } = yield* exited(gateway.child).pipe(Effect.timeout("120 seconds"), Effect.orDie)
      assert.strictEqual(code, 1, gateway.output())
      assert.include(gateway.output(), `HTTP port ${port} on 127.0.0.1 is in use by another process`)
      assert.notInclude(gateway.output(), "wagate all on")
      assert.isFalse(existsSync(join(dataDir, "pg")), "the embedded database was opened")
    }), { timeout: 180_000 })
})
