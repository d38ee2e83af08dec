/**
 * The batched writer: what queues up while a statement runs goes as the next one, each caller
 * gets its own item's result, a failing batch written again one item at a time fails only the
 * item at fault, and a caller that stops waiting leaves the others (and its own item) alone.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Batched from "../src/Batched.js"

/** A writer whose first statement waits for `release`; it records every batch it is given. */
const gatedWriter = Effect.gen(function*() {
  const release = yield* Deferred.make<void>()
  const started = yield* Deferred.make<void>()
  const batches: Array<ReadonlyArray<number>> = []
  const write = (batch: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      batches.push(batch)
      if (batches.length === 1) {
        yield* Deferred.succeed(started, undefined)
        yield* Deferred.await(release)
      }
      if (batch.includes(13)) return yield* Effect.fail(`13 refused`)
      return batch.map((n) => n * 10)
    })
  return { release, started, batches, write }
})

describe("Batched", () => {
  it.scoped("items queued while a statement runs go together as the next one, each with its own result", () =>
    Effect.gen(function*() {
      const gate = yield* gatedWriter
      const enqueue = yield* Batched.withResults(gate.write)
      const first = yield* Effect.fork(enqueue(1))
      yield* Deferred.await(gate.started)
      const rest = yield* Effect.forEach([2, 3, 4], (n) => Effect.fork(enqueue(n)))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate.release, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.deepStrictEqual(yield* Effect.forEach(rest, Fiber.join), [20, 30, 40])
      assert.deepStrictEqual(gate.batches, [[1], [2, 3, 4]])
    }))

  it.scoped("a failing batch is written again one item at a time: only the item at fault fails", () =>
    Effect.gen(function*() {
      const gate = yield* gatedWriter
      const enqueue = yield* Batched.withResults(gate.write, {
        singly: (n) => n === 13 ? Effect.fail(`13 refused alone`) : Effect.succeed(n * 100)
      })
      const first = yield* Effect.fork(enqueue(1))
      yield* Deferred.await(gate.started)
      const rest = yield* Effect.forEach([12, 13, 14], (n) => Effect.fork(Effect.either(enqueue(n))))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate.release, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.deepStrictEqual(yield* Effect.forEach(rest, Fiber.join), [
        Either.right(1200),
        Either.left("13 refused alone"),
        Either.right(1400)
      ])
    }))

  it.scoped("without `singly` every item of a failing batch fails with its error", () =>
    Effect.gen(function*() {
      const gate = yield* gatedWriter
      const enqueue = yield* Batched.make((batch: ReadonlyArray<number>) => Effect.asVoid(gate.write(batch)))
      const first = yield* Effect.fork(enqueue(1))
      yield* Deferred.await(gate.started)
      const rest = yield* Effect.forEach([12, 13], (n) => Effect.fork(Effect.either(enqueue(n))))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate.release, undefined)
      yield* Fiber.join(first)
      assert.deepStrictEqual(yield* Effect.forEach(rest, Fiber.join), [Either.left("13 refused"), Either.left("13 refused")])
    }))

  it.scoped("a caller that stops waiting still has its item written, and the others get their results", () =>
    Effect.gen(function*() {
      const gate = yield* gatedWriter
      const enqueue = yield* Batched.withResults(gate.write)
      const first = yield* Effect.fork(enqueue(1))
      yield* Deferred.await(gate.started)
      const gone = yield* Effect.fork(enqueue(2))
      const stays = yield* Effect.fork(enqueue(3))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(gone)
      yield* Deferred.succeed(gate.release, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.strictEqual(yield* Fiber.join(stays), 30)
      assert.deepStrictEqual(gate.batches, [[1], [2, 3]])
    }))

  it.scoped("an item alone is written at once", () =>
    Effect.gen(function*() {
      const written: Array<ReadonlyArray<string>> = []
      const enqueue = yield* Batched.withResults((batch: ReadonlyArray<string>) =>
        Effect.sync(() => {
          written.push(batch)
          return batch.map((s) => s.length)
        })
      )
      assert.strictEqual(yield* enqueue("one"), 3)
      assert.strictEqual(yield* enqueue("three"), 5)
      assert.deepStrictEqual(written, [["one"], ["three"]])
    }))
})
