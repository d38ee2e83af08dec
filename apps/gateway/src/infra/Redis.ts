/**
 * The optional Redis connection (`REDIS_URL`). Commands fail fast while it is down instead of
 * queueing, so a lost Redis degrades shared limits instead of stalling requests.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Redis as IORedis } from "ioredis"

export class Redis extends Context.Tag("@wagate/gateway/Redis")<Redis, {
  readonly url: string
  /** Prefix for every key and channel of this gateway. */
  readonly prefix: string
  readonly client: IORedis
  /** Opens another connection to the same server (subscribers need their own). */
  readonly duplicate: Effect.Effect<IORedis, never, Scope.Scope>
}>() {}

const open = (url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const client = new IORedis(url, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        connectTimeout: 2000,
        retryStrategy: (times) => Math.min(times * 200, 2000)
      })
      // Without a listener ioredis prints every failed reconnect; the commands that fail while
      // Redis is down are reported by their callers, once per outage.
      client.on("error", () => undefined)
      return client
    }),
    (client) => Effect.promise(() => client.quit().catch(() => client.disconnect()))
  )

/** The connection to REDIS_URL; without it the gateway keeps shared state in memory. */
export const layer = (url: Redacted.Redacted, prefix: string) =>
  Layer.scoped(Redis, Effect.gen(function*() {
    const raw = Redacted.value(url)
    const client = yield* open(raw)
    // Wait briefly for the first connection so start-up reports a wrong URL early.
    yield* Effect.promise(() =>
      new Promise<void>((resolve) => {
        if (client.status === "ready") return resolve()
        const done = () => resolve()
        client.once("ready", done)
        setTimeout(done, 2000).unref()
      })
    )
    return { url: raw, prefix, client, duplicate: open(raw) }
  }))
