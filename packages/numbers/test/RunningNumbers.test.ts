/**
 * The registry's sends served in the process: taken while the entity runs and owns its shard,
 * and, as the entity stops, finished before its teardown goes on or interrupted after the grace.
 * (The number entity serving its sends so: NumberLive.test.ts; every send of the HTTP and MCP
 * tests on one process goes this way.)
 */
import { assert, describe, it } from "@effect/vitest"
import type { SendPayload, Sent } from "@wagate/entities/NumberEntity"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { RunningNumbers } from "../src/RunningNumbers.js"

const payload: SendPayload = { to: "77770000001", content: { _tag: "text", text: "hi" }, source: "api" }
const sent: Sent = { messageId: 1, waMessageId: "3EB0X", phone: "77010000001", quota: { limit: 200, remaining: 199, reset: 1 } }

/** An entity's scope serving a send that waits for `release`, with `here` saying whether it owns the shard. */
const serving = (grace: Duration.DurationInput, interruptible = true) =>
  Effect.gen(function*() {
    const running = yield* RunningNumbers
    const scope = yield* Scope.make()
    const release = yield* Deferred.make<void>()
    const started = yield* Deferred.make<void>()
    let here = true
    yield* running.serve(
      7,
      () =>
        Effect.zipRight(
          Deferred.succeed(started, undefined),
          Effect.as(interruptible ? Deferred.await(release) : Effect.uninterruptible(Deferred.await(release)), sent)
        ),
      { here: () => here, grace }
    ).pipe(Scope.extend(scope))
    return { running, scope, release, started, move: () => void (here = false) }
  })

describe("RunningNumbers: sends served in the process", () => {
  it.scoped("are served while the entity runs and owns the number's shard, and not after", () =>
    Effect.gen(function*() {
      const { move, release, running, scope } = yield* serving("15 seconds")
      assert.isUndefined(running.localSend(8))
      const send = running.localSend(7)
      assert.isDefined(send)
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* send!(payload), sent)
      move()
      assert.isUndefined(running.localSend(7), "a shard moved on: the cluster takes the send to its owner")
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(RunningNumbers.Default)))

  it.scoped("a stopping entity takes no more, and lets the send under way finish before its teardown goes on", () =>
    Effect.gen(function*() {
      const { release, running, scope, started } = yield* serving("15 seconds")
      const call = yield* Effect.fork(running.localSend(7)!(payload))
      yield* Deferred.await(started)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* TestClock.adjust("1 second")
      assert.isUndefined(running.localSend(7), "no new calls once the entity stops")
      assert.isNull(closing.unsafePoll(), "the teardown waits for the send")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(yield* Fiber.join(call), sent)
    }).pipe(Effect.provide(RunningNumbers.Default)))

  it.scoped("a send that outlasts the grace is interrupted, and the teardown goes on", () =>
    Effect.gen(function*() {
      const { running, scope, started } = yield* serving("15 seconds")
      const call = yield* Effect.fork(Effect.exit(running.localSend(7)!(payload)))
      yield* Deferred.await(started)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* TestClock.adjust("14 seconds")
      assert.isNull(closing.unsafePoll())
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(closing)
      const exit = yield* Fiber.join(call)
      assert.isTrue(Exit.isInterrupted(exit), "the caller sees the call interrupted (answered as a runner stopping)")
    }).pipe(Effect.provide(RunningNumbers.Default)))

  it.scoped("a caller that stops waiting is answered at once, even when the send cannot be interrupted where it is", () =>
    Effect.gen(function*() {
      const { release, running, scope, started } = yield* serving("15 seconds", false)
      const call = yield* Effect.fork(Effect.either(Effect.timeout(running.localSend(7)!(payload), "2 seconds")))
      yield* Deferred.await(started)
      yield* TestClock.adjust("2 seconds")
      const answer = yield* Fiber.join(call)
      assert.isTrue(answer._tag === "Left" && answer.left._tag === "TimeoutException")
      // The entity waits for the send it could not stop before its teardown goes on.
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* TestClock.adjust("1 second")
      assert.isNull(closing.unsafePoll())
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(closing)
    }).pipe(Effect.provide(RunningNumbers.Default)))
})
