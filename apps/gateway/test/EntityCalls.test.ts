import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { assert, describe, it } from "@effect/vitest"
import { NotConnected } from "@wagate/domain/ApiError"
import { CurrentKey } from "@wagate/domain/Auth"
import { AccountId, ApiKeyId } from "@wagate/domain/Ids"
import { NumberMoved } from "@wagate/entities/NumberEntity"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { bounded } from "../src/http/EntityCalls.js"

/** An entity call that answers NumberMoved `moves` times (its number moving between runners), then `last`. */
const movingCall = (moves: number, last: Effect.Effect<string, NotConnected>) => {
  let calls = 0
  const call = Effect.suspend((): Effect.Effect<string, NotConnected | NumberMoved> =>
    ++calls <= moves ? Effect.fail(new NumberMoved()) : last
  )
  return { call, calls: () => calls }
}

describe("bounded entity calls", () => {
  it.effect("a call that met its number moving is asked again until the new owner answers", () =>
    Effect.gen(function*() {
      const { call, calls } = movingCall(3, Effect.succeed("sent"))
      const fiber = yield* Effect.fork(bounded("15 seconds")(call))
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Fiber.join(fiber), "sent")
      assert.strictEqual(calls(), 4)
    }))

  it.effect("the new owner's refusal is the answer", () =>
    Effect.gen(function*() {
      const { call } = movingCall(1, Effect.fail(new NotConnected()))
      const fiber = yield* Effect.fork(Effect.either(bounded("15 seconds")(call)))
      yield* TestClock.adjust("1 second")
      const answer = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(answer))
      if (Either.isLeft(answer)) assert.strictEqual(answer.left.code, "not_connected")
    }))

  it.effect("a number that keeps moving past the time bound answers 503 capacity", () =>
    Effect.gen(function*() {
      const { call } = movingCall(Infinity, Effect.succeed("sent"))
      const fiber = yield* Effect.fork(Effect.either(bounded("15 seconds")(call)))
      yield* TestClock.adjust("15 seconds")
      const answer = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(answer))
      if (Either.isLeft(answer)) assert.deepStrictEqual([answer.left.code, answer.left.status], ["capacity", 503])
    }))

  it.effect("a call interrupted on the entity's runner (it stopped) answers 503 capacity, to try again", () =>
    Effect.gen(function*() {
      const stopped = Effect.failCause(Cause.interrupt(FiberId.make(7, 0)))
      const answer = yield* Effect.either(bounded("15 seconds")(stopped))
      assert.isTrue(Either.isLeft(answer))
      if (Either.isLeft(answer)) {
        assert.strictEqual(answer.left.code, "capacity")
        assert.strictEqual(answer.left.retryAfter, 1)
      }
    }))

  it.effect("what a call starts (an entity, built in the caller's fiber) does not log with the request's annotations", () =>
    Effect.gen(function*() {
      // As the cluster starts an entity: a fiber forked in the calling fiber that outlives the call.
      const call = Effect.flatMap(Effect.forkDaemon(FiberRef.get(FiberRef.currentLogAnnotations)), Fiber.join)
      const [started, own] = yield* Effect.all([bounded("15 seconds")(call), FiberRef.get(FiberRef.currentLogAnnotations)]).pipe(
        Effect.annotateLogs("request_id", "r-1")
      )
      assert.strictEqual(HashMap.size(started), 0)
      // The request keeps its own.
      assert.deepStrictEqual(HashMap.get(own, "request_id"), Option.some("r-1"))
    }))

  it.effect("what a call starts keeps nothing of the request: not the request, its key, nor its response's handlers", () =>
    Effect.gen(function*() {
      const request = HttpServerRequest.fromWeb(new Request("http://localhost/api/v1/messages/send", { method: "POST" }))
      const key = { keyId: ApiKeyId.make(1), accountId: AccountId.make(1), numberId: null }
      // As the cluster starts an entity: a fiber forked in the calling fiber that outlives the call.
      const call = Effect.flatMap(
        Effect.forkDaemon(Effect.all([
          Effect.serviceOption(HttpServerRequest.HttpServerRequest),
          Effect.serviceOption(CurrentKey),
          FiberRef.get(HttpApp.currentPreResponseHandlers)
        ])),
        Fiber.join
      )
      const [[startedRequest, startedKey, startedHandlers], own] = yield* Effect.all([
        bounded("15 seconds")(call),
        Effect.serviceOption(CurrentKey)
      ]).pipe(
        Effect.locally(HttpApp.currentPreResponseHandlers, Option.some((_request, response) => Effect.succeed(response))),
        Effect.provideService(HttpServerRequest.HttpServerRequest, request),
        Effect.provideService(CurrentKey, key)
      )
      assert.isTrue(Option.isNone(startedRequest))
      assert.isTrue(Option.isNone(startedKey))
      assert.isTrue(Option.isNone(startedHandlers))
      // The request keeps its own.
      assert.deepStrictEqual(own, Option.some(key))
    }))

  it.live("what a call starts does not keep the request in memory", () =>
    Effect.gen(function*() {
      setFlagsFromString("--expose-gc")
      const collect: () => void = runInNewContext("gc")
      const entityStops = yield* Deferred.make<void>()
      let request: WeakRef<HttpServerRequest.HttpServerRequest> | undefined
      yield* Effect.suspend(() => {
        const made = HttpServerRequest.fromWeb(new Request("http://localhost/ops/v1/accounts/1/numbers", { method: "POST" }))
        request = new WeakRef(made)
        // As the cluster starts an entity: a fiber forked in the call that outlives it.
        const call = Effect.asVoid(Effect.forkDaemon(Deferred.await(entityStops)))
        return bounded("15 seconds")(call).pipe(
          Effect.provideService(HttpServerRequest.HttpServerRequest, made),
          Effect.annotateLogs("request_id", "r-1")
        )
      })
      // A weakly held object stays alive until the job that made it has ended.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      collect()
      assert.isUndefined(request?.deref(), "the started fiber still holds the request")
      yield* Deferred.succeed(entityStops, undefined)
    }))
})
