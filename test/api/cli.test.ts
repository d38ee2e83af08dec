/**
 * The operator CLI as a process: the gateway's own `{error, code}` whatever its status.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { runCli } from "../support/Cli.js"
import { freshDatabase, OPERATOR_TOKEN, startGateway } from "../support/TestGateway.js"

describe("the operator CLI", () => {
  it.scopedLive("prints the gateway's own refusal of a status the operator API does not declare (413 payload_too_large)", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase, { settings: { maxBodyBytes: 60 } })
      const env = { WAGATE_URL: gateway.url, OPERATOR_TOKEN }
      const run = yield* runCli(["account", "create", "--email", "a@b.kz", "--company", "A company name long enough to pass the limit"], { env })
      assert.strictEqual(run.exit, 1, JSON.stringify(run))
      assert.deepStrictEqual(JSON.parse(run.stdout), { error: "Request body is too large", code: "payload_too_large" })
      // A refusal the API declares reads as before.
      const missing = yield* runCli(["account", "show", "--account", "999999"], { env })
      assert.deepStrictEqual([missing.exit, JSON.parse(missing.stdout)], [1, { error: "No account 999999", code: "not_found" }])
    }))
})
