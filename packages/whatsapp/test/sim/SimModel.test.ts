/**
 * The network's log of received messages: the latest are kept, oldest first, and recognised when
 * re-sent; the oldest are forgotten once the log is full, so a long-running simulator stays
 * bounded.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as SimModel from "../../src/sim/SimModel.js"
import * as SimSentMessage from "../../src/sim/SimSentMessage.js"

const entry = (i: number): SimModel.LogEntry => ({
  ...SimSentMessage.fromOutgoing("77010000001", {
    waMessageId: `M${i}`,
    to: "77010000002",
    content: { kind: "text", text: `message ${i}` }
  }, i)
})

describe("SimModel.record", () => {
  it.scoped("keeps the latest messages and forgets the oldest beyond the limit", () =>
    Effect.gen(function*() {
      const model = yield* SimModel.make({})
      for (let i = 1; i <= 11; i++) SimModel.record(model, entry(i), 10)
      // Within a tenth over the limit nothing is forgotten yet.
      assert.strictEqual(model.log.length, 11)
      SimModel.record(model, entry(12), 10)
      assert.deepStrictEqual(model.log.map((e) => e.waMessageId), Array.from({ length: 10 }, (_, i) => `M${i + 3}`))
      assert.deepStrictEqual([...model.logged.keys()], model.log.map((e) => SimModel.logKey(e.from, e.waMessageId)))
      assert.isFalse(model.logged.has(SimModel.logKey("77010000001", "M2")))
      for (let i = 13; i <= 1000; i++) SimModel.record(model, entry(i), 10)
      assert.isAtMost(model.log.length, 11)
      assert.strictEqual(model.logged.size, model.log.length)
      assert.strictEqual(model.log.at(-1)?.waMessageId, "M1000")
    }))
})
