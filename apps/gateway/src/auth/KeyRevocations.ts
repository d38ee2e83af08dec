/**
 * Tells every api process that a key was revoked, so caches of valid keys drop it at once.
 * Through Redis pub/sub when several processes run; in-process otherwise.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { Redis } from "../infra/Redis.js"

export interface KeyRevocationsService {
  /** Announces the revocation of the key with this hash (hex) to every process. */
  readonly publish: (hashHex: string) => Effect.Effect<void>
  /**
   * Calls `onRevoked` with each revoked hash, or with null when notices may have been missed
   * (the cache must then be cleared), for as long as the scope lives.
   */
  readonly listen: (onRevoked: (hashHex: string | null) => void) => Effect.Effect<void, never, Scope.Scope>
  /** Whether notices are arriving now; while not, nothing may be cached. */
  readonly reliable: () => boolean
}

export class KeyRevocations extends Context.Tag("@wagate/gateway/KeyRevocations")<
  KeyRevocations,
  KeyRevocationsService
>() {
  static readonly layerMemory = Layer.sync(KeyRevocations, () => {
    const listeners = new Set<(hash: string | null) => void>()
    return {
      publish: (hash) => Effect.sync(() => listeners.forEach((f) => f(hash))),
      listen: (f) => Effect.acquireRelease(Effect.sync(() => listeners.add(f)), () => Effect.sync(() => listeners.delete(f))),
      reliable: () => true
    }
  })

  static readonly layerRedis = Layer.scoped(KeyRevocations, Effect.gen(function*() {
    const redis = yield* Redis
    const channel = `${redis.prefix}:keys:revoked`
    const subscriber = yield* redis.duplicate
    const listeners = new Set<(hash: string | null) => void>()
    let subscribed = false
    subscriber.on("message", (_channel: string, hash: string) => listeners.forEach((f) => f(hash)))
    subscriber.on("ready", () => {
      // (Re)connected: notices sent while we were away are lost, so everything cached goes.
      listeners.forEach((f) => f(null))
      subscriber.subscribe(channel).then(() => {
        subscribed = true
      }, () => {
        subscribed = false
      })
    })
    subscriber.on("close", () => {
      subscribed = false
    })
    if (subscriber.status === "ready") {
      yield* Effect.promise(() => subscriber.subscribe(channel).then(() => (subscribed = true), () => false))
    }
    return {
      publish: (hash) =>
        Effect.tryPromise(() => redis.client.publish(channel, hash)).pipe(
          Effect.catchAll((error) => Effect.logError("could not announce a key revocation", error))
        ),
      listen: (f) => Effect.acquireRelease(Effect.sync(() => listeners.add(f)), () => Effect.sync(() => listeners.delete(f))),
      reliable: () => subscribed && subscriber.status === "ready"
    }
  }))
}
