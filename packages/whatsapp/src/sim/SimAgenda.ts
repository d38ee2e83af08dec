/**
 * The simulated network's timetable: what happens when (QR refreshes, automatic scans,
 * reconnects, acks, replies). One fiber runs the steps in time order, and steps due at the same
 * time in the order they were planned, so two messages sent one after the other are delivered in
 * that order under any clock (`TestClock` wakes simultaneous sleepers in no promised order).
 *
 * @since 1.0.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/** Connection steps outlive `reset`; message steps do not. @since 1.0.0 */
export type StepKind = "connection" | "message"

interface Step {
  readonly at: number
  readonly order: number
  readonly kind: StepKind
  readonly run: (now: number) => void
}

/** @since 1.0.0 */
export interface SimAgenda {
  /**
   * Plans a synchronous step for the instant `at` (epoch ms on Effect's Clock); it receives that
   * instant. Synchronous itself, so the network can plan inside its atomic changes.
   */
  readonly schedule: (at: number, kind: StepKind, run: (now: number) => void) => void
  /** Forgets every planned message step. */
  readonly dropMessages: () => void
}

/**
 * An agenda whose steps run for as long as the scope is open.
 *
 * @since 1.0.0
 */
export const make: Effect.Effect<SimAgenda, never, Scope.Scope> = Effect.gen(function*() {
  // A binary min-heap by (time, planning order): planning and taking a step cost O(log n), so
  // thousands of numbers with acks in flight cost no more per step than a few.
  let steps: Array<Step> = []
  let planned = 0
  // Tells the runner, waiting with nothing planned, that a step was planned.
  const wake = yield* Queue.sliding<void>(1)
  // The runner's sleep until its first step: cut short when an earlier step is planned, it ends
  // by itself otherwise (one fiber a wait, not two racing, whose loser would be interrupted).
  let sleeping: Fiber.RuntimeFiber<void> | null = null

  const before = (a: Step, b: Step) => a.at < b.at || (a.at === b.at && a.order < b.order)
  const up = (index: number) => {
    const step = steps[index]
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (!before(step, steps[parent])) break
      steps[index] = steps[parent]
      index = parent
    }
    steps[index] = step
  }
  const down = (index: number) => {
    const step = steps[index]
    const n = steps.length
    while (true) {
      const left = 2 * index + 1
      if (left >= n) break
      const right = left + 1
      const child = right < n && before(steps[right], steps[left]) ? right : left
      if (!before(steps[child], step)) break
      steps[index] = steps[child]
      index = child
    }
    steps[index] = step
  }
  const take = (): Step => {
    const first = steps[0]
    const last = steps.pop()!
    if (steps.length > 0) {
      steps[0] = last
      down(0)
    }
    return first
  }

  const schedule = (at: number, kind: StepKind, run: (now: number) => void) => {
    steps.push({ at, order: planned++, kind, run })
    up(steps.length - 1)
    // Only a new first step changes how long the runner sleeps.
    if (steps[0].order !== planned - 1) return
    if (sleeping !== null) sleeping.unsafeInterruptAsFork(FiberId.none)
    else wake.unsafeOffer(undefined)
  }

  const runStep = (step: Step) => {
    try {
      step.run(step.at)
      return Effect.void
    } catch (defect) {
      return Effect.logError("simulator: a network step died", defect)
    }
  }

  const runner = Effect.gen(function*() {
    while (true) {
      const next = steps[0]
      if (next === undefined) {
        yield* Queue.take(wake)
        continue
      }
      const now = yield* Clock.currentTimeMillis
      if (next.at > now) {
        sleeping = yield* Effect.fork(Effect.sleep(next.at - now))
        yield* Fiber.await(sleeping)
        sleeping = null
        continue
      }
      // Every step due by now, in order, in one turn (steps planned meanwhile included).
      while (steps.length > 0 && steps[0].at <= now) yield* runStep(take())
    }
  })
  yield* Effect.forkScoped(runner)

  return {
    schedule,
    dropMessages: () => {
      steps = steps.filter((step) => step.kind !== "message")
      for (let i = (steps.length >> 1) - 1; i >= 0; i--) down(i)
    }
  }
})
