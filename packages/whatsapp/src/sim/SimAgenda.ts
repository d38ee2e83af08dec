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
  let steps: Array<Step> = []
  let planned = 0
  // Tells the runner that an earlier step may have been planned than the one it sleeps for.
  const wake = yield* Queue.sliding<void>(1)

  const schedule = (at: number, kind: StepKind, run: (now: number) => void) => {
    const step: Step = { at, order: planned++, kind, run }
    // Steps stay sorted by time, then planning order: insert after every step due no later.
    let index = steps.length
    while (index > 0 && steps[index - 1].at > at) index--
    steps.splice(index, 0, step)
    wake.unsafeOffer(undefined)
  }

  const runStep = (step: Step) =>
    Effect.sync(() => step.run(step.at)).pipe(
      Effect.catchAllDefect((defect) => Effect.logError("simulator: a network step died", defect))
    )

  const runner = Effect.gen(function*() {
    while (true) {
      const next = steps[0]
      if (next === undefined) {
        yield* Queue.take(wake)
        continue
      }
      const now = yield* Clock.currentTimeMillis
      if (next.at > now) {
        yield* Effect.raceFirst(Effect.sleep(next.at - now), Queue.take(wake))
        continue
      }
      steps.shift()
      yield* runStep(next)
    }
  })
  yield* Effect.forkScoped(runner)

  return {
    schedule,
    dropMessages: () => {
      steps = steps.filter((step) => step.kind !== "message")
    }
  }
})
