/**
 * A setting out of its bounds ends the start at once, exit status 1, with a message naming it,
 * before the database is opened: the gateway's own settings and those a layer reads for itself.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../support/Ports.js"
import { exited, spawnGateway } from "./support/GatewayProcess.js"

const refused = (setting: Record<string, string>, messages: string | ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const dataDir = join(mkdtempSync(join(tmpdir(), "wagate-settings-")), "data")
    const gateway = yield* spawnGateway({
      DATA_DIR: dataDir,
      HTTP_HOST: "127.0.0.1",
      HTTP_PORT: String(yield* freePort),
      WA_DRIVER: "simulator",
      ...setting
    })
    const { code } = yield* exited(gateway.child).pipe(Effect.timeout("120 seconds"), Effect.orDie)
    assert.strictEqual(code, 1, gateway.output())
    for (const message of typeof messages === "string" ? [messages] : messages) assert.include(gateway.output(), message)
    assert.notInclude(gateway.output(), "wagate all on")
    assert.isFalse(existsSync(join(dataDir, "pg")), `the embedded database was opened:\n${gateway.output()}`)
  })

describe("a bad setting", () => {
  it.scopedLive("ends the start with exit status 1 and the setting named, before the database opens", () =>
    Effect.all([
      refused({ MAX_BODY_BYTES: "-5" }, `Invalid data at MAX_BODY_BYTES: "MAX_BODY_BYTES must be at least 1"`),
      // Read by the WhatsApp driver's layer, checked with the rest at start.
      refused({ WA_CONNECT_CONCURRENCY: "0" }, `Invalid data at WA_CONNECT_CONCURRENCY: "WA_CONNECT_CONCURRENCY must be at least 1"`),
      // Every bad value at once, the gateway's own and a layer's: not one after the other is fixed.
      refused(
        { MAX_BODY_BYTES: "-5", WA_CONNECT_CONCURRENCY: "0", MEDIA_MAX_CONCURRENT: "0" },
        [
          `Invalid data at MAX_BODY_BYTES: "MAX_BODY_BYTES must be at least 1"`,
          `Invalid data at MEDIA_MAX_CONCURRENT: "MEDIA_MAX_CONCURRENT must be a positive integer"`,
          `Invalid data at WA_CONNECT_CONCURRENCY: "WA_CONNECT_CONCURRENCY must be at least 1"`
        ]
      )
    ], { concurrency: "unbounded" }), { timeout: 180_000 })
})
