/**
 * Keeps every linked number's entity running: once when the cluster starts, then every minute,
 * it wakes the entities of linked numbers, a few at a time and with jitter, so a restart with
 * thousands of numbers does not storm the network or the database. An entity that is up keeps
 * itself alive; this catches any that a move or a crash left down.
 */
import * as Singleton from "@effect/cluster/Singleton"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"

/** How many numbers are woken at once. */
export const WAKE_CONCURRENCY = 16
/** Each wake waits a random part of this first, so numbers do not all connect in step. */
export const WAKE_JITTER_MS = 250

/** Runs `wake` for every id, `concurrency` at a time, each after a random delay below `jitterMs`. */
export const spread = <E, R>(
  ids: ReadonlyArray<number>,
  wake: (id: number) => Effect.Effect<void, E, R>,
  options: { readonly concurrency: number; readonly jitterMs: number } = {
    concurrency: WAKE_CONCURRENCY,
    jitterMs: WAKE_JITTER_MS
  }
) =>
  Effect.forEach(
    ids,
    (id) => Effect.flatMap(Random.nextIntBetween(0, options.jitterMs), (jitter) => Effect.delay(wake(id), jitter)),
    { concurrency: options.concurrency, discard: true }
  )

export const NumberSupervisor = Singleton.make(
  "wagate/number-supervisor",
  Effect.gen(function*() {
    const states = yield* NumberStates
    const numbers = yield* NumberEntity.client
    const wake = (id: number) =>
      numbers(String(id)).Wake().pipe(
        Effect.timeout("30 seconds"),
        Effect.catchAllCause((cause) => Effect.logWarning(`could not wake number ${id}`, cause))
      )
    const wakeAll = Effect.flatMap(states.live(), (ids) => spread(ids, wake))
    yield* wakeAll.pipe(Effect.repeat(Schedule.spaced("1 minute")))
  })
)
