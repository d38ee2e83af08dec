/**
 * The operator CLI as a process: the gateway's own `{error, code}` whatever its status, the
 * `wagate` command its shell completions are for, plain help in a pipe, and a wizard that refuses
 * to start without a terminal instead of waiting for ever.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { runCli } from "../support/Cli.js"
import { freshDatabase, OPERATOR_TOKEN, startGateway } from "../support/TestGateway.js"

const ESC = "\u001b"

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

  it.live("is the wagate command its completion scripts complete", () =>
    Effect.gen(function*() {
      const version = yield* runCli(["--version"], { bin: true })
      assert.deepStrictEqual([version.exit, version.stdout.trim()], [0, "1.0.0"], JSON.stringify(version))
      const bash = yield* runCli(["--completions", "bash"], { bin: true })
      assert.strictEqual(bash.exit, 0, bash.stderr)
      assert.match(bash.stdout, /^complete -F _wagate_bash_completions .* wagate$/m)
      assert.include(bash.stdout, "wagate,account,create)")
    }), 60_000)

  it.live("writes its help without colours into a pipe", () =>
    Effect.gen(function*() {
      const help = yield* runCli(["--help"])
      assert.strictEqual(help.exit, 0, help.stderr)
      assert.include(help.stdout, "wagate 1.0.0")
      assert.include(help.stdout, "account")
      assert.notInclude(help.stdout, ESC)
      // A wrong command line is explained on stderr, plain too.
      const wrong = yield* runCli(["account", "show"])
      assert.strictEqual(wrong.exit, 1)
      assert.include(wrong.stderr, "--account")
      assert.notInclude(wrong.stderr, ESC)
    }), 60_000)

  it.live("refuses --wizard at once when stdin is not a terminal", () =>
    Effect.gen(function*() {
      const wizard = yield* runCli(["--wizard"], { timeoutMs: 20_000 })
      assert.strictEqual(wizard.exit, 1, JSON.stringify(wizard))
      assert.include(wizard.stderr, "--wizard asks its questions on a terminal and stdin is not one")
    }), 60_000)
})
