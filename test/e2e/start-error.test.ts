/**
 * A start that fails ends the process with exit status 1 and an error line that says why in its
 * message: a JSON log line whose message is empty leaves the reader only a stack to go by.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../support/Ports.js"
import { exited, spawnGateway } from "./support/GatewayProcess.js"

describe("a start that fails", () => {
  it.scopedLive("logs the cause in the error's message", () =>
    Effect.gen(function*() {
      const databaseUrl = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
      databaseUrl.pathname = "/wagate_no_such_database"
      const gateway = yield* spawnGateway({
        DATABASE_URL: databaseUrl.toString(),
        DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-start-error-")),
        HTTP_HOST: "127.0.0.1",
        HTTP_PORT: String(yield* freePort),
        WA_DRIVER: "simulator",
        LOG_FORMAT: "json"
      })
      const { code } = yield* exited(gateway.child).pipe(Effect.timeout("120 seconds"), Effect.orDie)
      assert.strictEqual(code, 1, gateway.output())
      const errors = gateway.output().split("\n").filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { message: unknown; logLevel: string })
        .filter((line) => line.logLevel === "ERROR")
      assert.lengthOf(errors, 1, gateway.output())
      assert.include(String(errors[0]!.message), `database "wagate_no_such_database" does not exist`, gateway.output())
    }), { timeout: 180_000 })
})
