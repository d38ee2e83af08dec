/**
 * One gateway per DATA_DIR on the embedded database: a second process on the same directory exits
 * at start, naming the directory and the gateway that holds it, and the first goes on serving. A
 * gateway killed with SIGKILL leaves its lock behind; the next start takes it over.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../support/Ports.js"
import { exited, spawnGateway, startGateway } from "./support/GatewayProcess.js"

const embedded = (dataDir: string, port: number) => ({
  DATA_DIR: dataDir,
  HTTP_HOST: "127.0.0.1",
  HTTP_PORT: String(port),
  WA_DRIVER: "simulator"
})

const status = (port: number) =>
  Effect.promise(() => fetch(`http://127.0.0.1:${port}/api/status`).then((r) => r.status, () => 0))

const lockHolder = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, "gateway.lock"), "utf8")).pid as number

describe("DATA_DIR on the embedded database", () => {
  it.scopedLive("serves one gateway: a second exits at start; a killed one's lock does not block the next", () =>
    Effect.gen(function*() {
      const dataDir = join(mkdtempSync(join(tmpdir(), "wagate-lock-")), "data")
      const firstPort = yield* freePort
      const first = yield* startGateway(embedded(dataDir, firstPort))

      const secondPort = yield* freePort
      const second = yield* spawnGateway(embedded(dataDir, secondPort))
      const { code } = yield* exited(second.child).pipe(Effect.timeout("120 seconds"), Effect.orDie)
      assert.strictEqual(code, 1, second.output())
      assert.include(second.output(), `DATA_DIR ${dataDir} is in use by process ${first.child.pid}`)
      assert.notInclude(second.output(), "wagate all on")
      assert.strictEqual(yield* status(secondPort), 0)
      // The first one holds the directory still, and serves.
      assert.strictEqual(yield* status(firstPort), 200)
      assert.strictEqual(lockHolder(dataDir), first.child.pid)

      first.child.kill("SIGKILL")
      yield* exited(first.child)
      assert.strictEqual(lockHolder(dataDir), first.child.pid)
      const third = yield* startGateway(embedded(dataDir, yield* freePort))
      assert.strictEqual(lockHolder(dataDir), third.child.pid)

      // A gateway that stops leaves no lock.
      third.child.kill("SIGTERM")
      const stopped = yield* exited(third.child).pipe(Effect.timeout("60 seconds"), Effect.orDie)
      assert.strictEqual(stopped.code, 0, third.output())
      assert.isFalse(existsSync(join(dataDir, "gateway.lock")))
    }), { timeout: 480_000 })
})
