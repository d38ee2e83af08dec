/**
 * The Redis connections (apps/gateway/src/infra/Redis.ts) against a real Redis behind a proxy that
 * drops or stalls them at chosen moments. That must fail only the commands of the gateway that
 * sent them: an unhandled rejection stops a Node process.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { Redis as IORedis } from "ioredis"
import { KeyRevocations } from "../../apps/gateway/src/auth/KeyRevocations.js"
import * as Redis from "../../apps/gateway/src/infra/Redis.js"
import { eventually } from "../support/Fixtures.js"
import * as TcpProxy from "../support/TcpProxy.js"
import { REDIS_URL, redisPrefix } from "../support/TestGateway.js"

/** Collects the process's unhandled rejections for as long as the scope lives. */
const unhandledRejections = Effect.acquireRelease(
  Effect.sync(() => {
    const seen: Array<unknown> = []
    const listener = (reason: unknown) => seen.push(reason)
    process.on("unhandledRejection", listener)
    return { seen, listener }
  }),
  ({ listener }) => Effect.sync(() => process.off("unhandledRejection", listener))
).pipe(Effect.map(({ seen }) => seen))

describe("Redis connections", () => {
  it.scopedLive("the key revocation subscriber survives a Redis that stalls as it subscribes again, and listens once Redis answers", () =>
    Effect.gen(function*() {
      const rejections = yield* unhandledRejections
      const proxy = yield* TcpProxy.start({ host: "127.0.0.1", port: 6379 })
      const prefix = redisPrefix()
      const revocations = Context.get(
        yield* Layer.build(KeyRevocations.layerRedis.pipe(
          Layer.provide(Redis.layer(Redacted.make(`redis://127.0.0.1:${proxy.port}`), prefix))
        )),
        KeyRevocations
      )
      const heard: Array<string | null> = []
      yield* revocations.listen((hash) => heard.push(hash))
      yield* eventually(Effect.sync(() => revocations.reliable()), (reliable) => reliable, 10_000)

      // The connection drops; on every new one Redis stalls as the client subscribes again, and
      // the commands sent meanwhile time out.
      yield* proxy.freezeOnSend("subscribe")
      yield* proxy.cut
      yield* eventually(Effect.sync(() => proxy.frozenOnSend()), (frozen) => frozen >= 2, 30_000)
      assert.isFalse(revocations.reliable())

      // Once Redis answers, the subscriber listens again without help, and hears a notice.
      yield* proxy.freezeOnSend(undefined)
      yield* eventually(Effect.sync(() => revocations.reliable()), (reliable) => reliable, 20_000)
      const publisher = yield* Effect.acquireRelease(
        Effect.sync(() => new IORedis(REDIS_URL)),
        (client) => Effect.promise(() => client.quit())
      )
      yield* Effect.promise(() => publisher.publish(`${prefix}:keys:revoked`, "abc123"))
      yield* eventually(Effect.sync(() => heard), (hashes) => hashes.includes("abc123"), 10_000)
      assert.deepStrictEqual(rejections, [])
    }), { timeout: 60_000 })
})
