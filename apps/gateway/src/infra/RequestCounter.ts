/**
 * Counts requests per key in fixed windows (e.g. per calendar minute), shared by every api
 * process through Redis, or in memory for a single process. Windows follow the clock the layer
 * was built with (tests give it one they move by hand).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Redis } from "./Redis.js"

export interface Hit {
  /** Requests in this window, this one included. */
  readonly count: number
  /** Milliseconds until the window ends. */
  readonly resetMs: number
}

export class RequestCounter extends Context.Tag("@wagate/gateway/RequestCounter")<RequestCounter, {
  readonly hit: (key: string, windowMs: number) => Effect.Effect<Hit>
}>() {
  static readonly layerMemory = Layer.effect(RequestCounter, Effect.map(Effect.clock, (clock) => {
    const windows = new Map<string, { window: number; count: number }>()
    let swept = 0
    return RequestCounter.of({
      hit: (key, windowMs) =>
        Effect.map(clock.currentTimeMillis, (now) => {
          const window = Math.floor(now / windowMs)
          if (window !== swept) {
            // A new window somewhere: forget counters of past windows so memory stays bounded.
            swept = window
            for (const [k, v] of windows) if (v.window < window - 1) windows.delete(k)
          }
          const current = windows.get(key)
          const entry = current && current.window === window ? current : { window, count: 0 }
          entry.count++
          windows.set(key, entry)
          return { count: entry.count, resetMs: (window + 1) * windowMs - now }
        })
    })
  }))

  static readonly layerRedis = Layer.effect(RequestCounter, Effect.gen(function*() {
    const { client, prefix } = yield* Redis
    const clock = yield* Effect.clock
    const script = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return c`
    return RequestCounter.of({
      hit: (key, windowMs) =>
        Effect.flatMap(clock.currentTimeMillis, (now) => {
          const window = Math.floor(now / windowMs)
          const resetMs = (window + 1) * windowMs - now
          return Effect.tryPromise(() =>
            client.eval(script, 1, `${prefix}:rl:${key}:${window}`, String(windowMs + 1000)) as Promise<number>
          ).pipe(
            Effect.map((count) => ({ count, resetMs })),
            // Redis down: the limit is not enforced rather than every request failing.
            Effect.catchAll((error) =>
              Effect.logWarning("request counter unavailable; allowing request", error).pipe(
                Effect.as({ count: 0, resetMs })
              )
            )
          )
        })
    })
  }))
}
