/**
 * A failed promise nobody waits for (a library's stray command) does not stop a real gateway:
 * it is logged and counted, and the process goes on serving its numbers.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { eventually, linked, provision } from "../support/Fixtures.js"
import { send, setup, startGateway } from "./support/GatewayProcess.js"

describe("a stray failed promise", () => {
  it.scopedLive("is logged and the gateway goes on sending", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const gateway = yield* startGateway(context.env, "test/e2e/support/HookedGateway.ts")
      const acme = yield* provision(context.ops)
      yield* linked(context.ops, acme.numbers[0]!.id)
      const numberKey = acme.numberKeys[0]!

      const stray = yield* send(context.url, numberKey, "stray")
      assert.strictEqual(stray.status, 200, JSON.stringify(stray.body))
      yield* eventually(Effect.sync(() => gateway.output()), (output) => output.includes("a stray command failed"), 30_000)
      assert.include(gateway.output(), "nobody waiting for it")

      // One message a second per number: asked again until that second has passed.
      const after = yield* eventually(send(context.url, numberKey, "after the stray one"), (r) => r.status !== 429, 10_000)
      assert.strictEqual(after.status, 200, JSON.stringify(after.body))
      assert.isNull(gateway.child.exitCode)
      // Counted for alerts, beside the log line.
      const metrics = yield* Effect.promise(() =>
        fetch(`${context.url}/ops/v1/metrics`, { headers: { authorization: `Bearer ${context.env.OPERATOR_TOKEN}` } }).then((r) => r.text())
      )
      assert.match(metrics, /^wagate_stray_failures 1$/m)
    }), { timeout: 180_000 })

  it.scopedLive("a warning of Node (a library's deprecated call) is a log line of the gateway's format, not Node's text", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const gateway = yield* startGateway({ ...context.env, LOG_FORMAT: "json" }, "test/e2e/support/HookedGateway.ts")
      const acme = yield* provision(context.ops)
      yield* linked(context.ops, acme.numbers[0]!.id)

      const sent = yield* send(context.url, acme.numberKeys[0]!, "deprecated")
      assert.strictEqual(sent.status, 200, JSON.stringify(sent.body))
      const output = yield* eventually(Effect.sync(() => gateway.output()), (o) => o.includes("goes away in the next major"), 30_000)
      const line = output.split("\n").find((l) => l.includes("goes away in the next major"))!
      const entry = JSON.parse(line)
      assert.strictEqual(entry.logLevel, "WARN")
      assert.deepStrictEqual(entry.message, "node: DeprecationWarning: this call goes away in the next major")
      assert.notInclude(output, "(node:")
    }), { timeout: 180_000 })
})
