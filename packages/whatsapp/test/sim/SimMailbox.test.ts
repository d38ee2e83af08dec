/**
 * A simulated session's event queue: events reach the handler one at a time and in order, also
 * those that arrive while the handler is busy or after the queue ran empty, never from inside
 * `offer`, and nothing is handed over once the session's scope has closed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as SimMailbox from "../../src/sim/SimMailbox.js"
import type { DriverEvent } from "../../src/WhatsAppDriver.js"

const ack = (waMessageId: string): DriverEvent => ({ _tag: "Ack", waMessageId, ack: "delivered" })
const idOf = (event: DriverEvent) => (event._tag === "Ack" ? event.waMessageId : event._tag)

describe("SimMailbox", () => {
  it.scoped("hands events over one at a time, in order, whenever they arrive", () =>
    Effect.gen(function*() {
      const handled: Array<string> = []
      let busy = 0
      let overlapped = false
      const mailbox = yield* SimMailbox.make("77010000001", (event) =>
        Effect.gen(function*() {
          if (++busy > 1) overlapped = true
          // A slow handler: later events queue up behind it.
          yield* Effect.sleep("10 millis")
          handled.push(idOf(event))
          busy--
        }))
      for (const id of ["a", "b", "c"]) mailbox.offer(ack(id))
      yield* TestClock.adjust("5 millis")
      mailbox.offer(ack("d"))
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(handled, ["a", "b", "c", "d"])
      // The queue ran empty: the next event is handed over all the same.
      mailbox.offer(ack("e"))
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(handled, ["a", "b", "c", "d", "e"])
      assert.isFalse(overlapped)
    }))

  it.scoped("never runs the handler inside offer, where the network is mid-change", () =>
    Effect.gen(function*() {
      const handled: Array<string> = []
      const mailbox = yield* SimMailbox.make("77010000001", (event) => Effect.sync(() => handled.push(idOf(event))))
      mailbox.offer(ack("a"))
      assert.deepStrictEqual(handled, [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(handled, ["a"])
    }))

  it.effect("hands nothing over once its scope has closed, and stops the handler it was running", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const handled: Array<string> = []
      const started = yield* Deferred.make<void>()
      let interrupted = false
      const mailbox = yield* SimMailbox.make("77010000001", (event) =>
        idOf(event) === "stuck"
          ? Effect.zipRight(
            Deferred.succeed(started, undefined),
            Effect.onInterrupt(Effect.never, () => Effect.sync(() => (interrupted = true)))
          )
          : Effect.sync(() => handled.push(idOf(event)))).pipe(Scope.extend(scope))
      mailbox.offer(ack("first"))
      mailbox.offer(ack("stuck"))
      mailbox.offer(ack("behind"))
      yield* Deferred.await(started)
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(interrupted)
      mailbox.offer(ack("late"))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(handled, ["first"])
    }))
})
