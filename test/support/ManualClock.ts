/**
 * A clock that stands still at a moment the test chooses and moves only when the test moves
 * it: for the parts of a running gateway whose time a test drives (request windows, the number
 * entities' days and pauses), while the rest keeps real time. Sleeps are real (`stepped`: they
 * wait for the test too).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

export interface ManualClock {
  readonly clock: Clock.Clock
  /** Moves the clock so that it reads `epochMs` now. */
  readonly set: (epochMs: number) => void
  readonly adjust: (by: Duration.DurationInput) => void
  readonly now: () => number
}

/** A clock that reads `now` and sleeps by `sleep`. */
const clockOf = (now: () => number, sleep: Clock.Clock["sleep"]): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: now,
  currentTimeMillis: Effect.sync(now),
  unsafeCurrentTimeNanos: () => BigInt(now()) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(now()) * 1_000_000n),
  sleep
})

export const make = (start: number = Date.now()): ManualClock => {
  let current = start
  const now = () => current
  const clock = clockOf(now, (duration) =>
    Effect.async<void>((resume) => {
      const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
      return Effect.sync(() => clearTimeout(timer))
    }))
  return {
    clock,
    set: (epochMs) => void (current = epochMs),
    adjust: (by) => void (current += Duration.toMillis(Duration.decode(by))),
    now
  }
}

/**
 * A ManualClock whose sleeps also wait for the test, as TestClock's do: one ends when the clock is
 * moved to or past its end. For waits the domain decides by its clock (the webhook loop's
 * backoff), which a test drives rather than sleeps through.
 */
export const stepped = (start: number = Date.now()): ManualClock & { readonly sleeping: () => number } => {
  let current = start
  let sleepers: Array<{ readonly until: number; readonly wake: () => void }> = []
  const now = () => current
  const moveTo = (epochMs: number) => {
    current = epochMs
    const due = sleepers.filter((s) => s.until <= current)
    sleepers = sleepers.filter((s) => s.until > current)
    for (const s of due) s.wake()
  }
  const clock = clockOf(now, (duration) =>
    Effect.async<void>((resume) => {
      const sleeper = { until: current + Duration.toMillis(duration), wake: () => resume(Effect.void) }
      if (sleeper.until <= current) return resume(Effect.void)
      sleepers.push(sleeper)
      return Effect.sync(() => void (sleepers = sleepers.filter((s) => s !== sleeper)))
    }))
  return {
    clock,
    set: moveTo,
    adjust: (by) => moveTo(current + Duration.toMillis(Duration.decode(by))),
    now,
    sleeping: () => sleepers.length
  }
}

/** A moment just after the start of a calendar minute, so a burst stays inside one window. */
export const startOfMinute = () => {
  const now = Date.now()
  return now - (now % 60_000) + 1
}
