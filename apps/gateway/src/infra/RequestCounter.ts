/**
 * Counts requests per key in fixed windows (e.g. per calendar minute), shared by every api
 * process through Redis, or in memory for a single process (and while Redis is down). Windows follow the clock the layer
 * was built with (tests give it one they move by hand).
 */
import type * as Clock from "effect/Clock"
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

/** Counts `requests` (one unless told) in the current window of `key`. */
type Counter = (key: string, windowMs: number, requests?: number) => Effect.Effect<Hit>

/** Counters in this process's memory, in windows of `clock`. */
const memoryCounter = (clock: Clock.Clock): Counter => {
  const windows = new Map<string, { window: number; count: number }>()
  let swept = 0
  return (key, windowMs, requests = 1) =>
    Effect.map(clock.currentTimeMillis, (now) => {
      const window = Math.floor(now / windowMs)
      if (window !== swept) {
        // A new window somewhere: forget counters of past windows so memory stays bounded.
        swept = window
        for (const [k, v] of windows) if (v.window < window - 1) windows.delete(k)
      }
      const current = windows.get(key)
      const entry = current && current.window === window ? current : { window, count: 0 }
      entry.count += requests
      windows.set(key, entry)
      return { count: entry.count, resetMs: (window + 1) * windowMs - now }
    })
}

export class RequestCounter extends Context.Tag("@wagate/gateway/RequestCounter")<RequestCounter, {
  readonly hit: Counter
}>() {
  static readonly layerMemory = Layer.effect(RequestCounter, Effect.map(Effect.clock, (clock) => RequestCounter.of({ hit: memoryCounter(clock) })))

  /**
   * Counters shared through Redis. While Redis does not answer, each process counts in its own
   * memory instead (so N api processes allow up to N times a limit, never unlimited), and goes
   * back to Redis once it answers again.
   */
  static readonly layerRedis = Layer.effect(RequestCounter, Effect.gen(function*() {
    const { client, prefix } = yield* Redis
    const clock = yield* Effect.clock
    const fallback = memoryCounter(clock)
    let degraded = false
    const script = `local c = redis.call('INCRBY', KEYS[1], ARGV[2])
if c == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return c`
    return RequestCounter.of({
      hit: (key, windowMs, requests = 1) =>
        Effect.flatMap(clock.currentTimeMillis, (now) => {
          const window = Math.floor(now / windowMs)
          const resetMs = (window + 1) * windowMs - now
          return Effect.tryPromise(() =>
            client.eval(script, 1, `${prefix}:rl:${key}:${window}`, String(windowMs + 1000), String(requests)) as Promise<number>
          ).pipe(
            Effect.tap(() => {
              if (!degraded) return Effect.void
              degraded = false
              return Effect.logInfo("request counters are shared through Redis again")
            }),
            Effect.map((count) => ({ count, resetMs })),
            Effect.catchAll((error) =>
              Effect.zipRight(
                degraded ? Effect.void : Effect.logWarning(
                  "Redis does not answer: request limits are counted in this process's memory until it does",
                  error
                ),
                Effect.suspend(() => {
                  degraded = true
                  return fallback(key, windowMs, requests)
                })
              )
            )
          )
        })
    })
  }))
}
