/**
 * Waking numbers at scale goes a few at a time, each after its own random delay, so thousands of
 * numbers do not reach WhatsApp and the database at once; a round wakes only the numbers of the
 * runner's shards whose entities are not running.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as NumberSupervisor from "../src/NumberSupervisor.js"

describe("NumberSupervisor", () => {
  it.effect("400 numbers: at most 16 wakes at once, their starts spread by jitter, every number once", () =>
    Effect.gen(function*() {
      let inFlight = 0
      let most = 0
      const started = new Map<number, number>()
      const wake = (id: number) =>
        Effect.gen(function*() {
          started.set(id, (started.get(id) ?? 0) + 1)
          inFlight++
          most = Math.max(most, inFlight)
          // A wake takes a while: the entity starts and its session is opened.
          yield* Effect.sleep("100 millis")
          inFlight--
        })
      const startedAt: Array<number> = []
      const fiber = yield* Effect.fork(
        NumberSupervisor.spread(Array.from({ length: 400 }, (_, i) => i + 1), (id) =>
          Effect.zipRight(
            Effect.flatMap(TestClock.currentTimeMillis, (now) => Effect.sync(() => void startedAt.push(now))),
            wake(id)
          ))
      )
      for (let i = 0; i < 1000 && fiber.unsafePoll() === null; i++) yield* TestClock.adjust("200 millis")
      yield* Fiber.join(fiber)
      assert.strictEqual(started.size, 400)
      assert.isTrue([...started.values()].every((n) => n === 1))
      // A slot is held through its jitter too, so fewer than 16 may be waking at a given instant.
      assert.isAtMost(most, NumberSupervisor.WAKE_CONCURRENCY)
      assert.isAtLeast(most, 8)
      // Not all in step: within the first slots the start times differ.
      assert.isAbove(new Set(startedAt.slice(0, 16)).size, 1)
      // 400 wakes of 100 ms plus up to 250 ms of jitter, 16 at a time: seconds, not an instant.
      const span = Math.max(...startedAt) - Math.min(...startedAt)
      assert.isAbove(span, 3_000)
    }))

  it("a round wakes the linked numbers of this runner's shards whose entities are not running here", () => {
    const owned = new Set([1, 2, 3])
    const running = new Set([2])
    assert.deepStrictEqual(NumberSupervisor.toWake([1, 2, 3, 4], (id) => owned.has(id), (id) => running.has(id)), [1, 3])
  })
})
