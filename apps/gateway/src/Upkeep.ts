/**
 * Background upkeep on every process that hosts entities (expired Idempotency-Keys, processed
 * cluster messages, kept files, the webhook delivery log): a sweep that runs at once and then every interval, for the life
 * of the layer. Everything it works on is in the database, so it resumes after a restart, and
 * several processes share it.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"

/** Runs `sweep` at once and then every `interval`; a sweep that fails is logged, and the next runs as planned. */
export const every = <A, E, R>(interval: Duration.DurationInput, what: string, sweep: Effect.Effect<A, E, R>) =>
  Layer.scopedDiscard(Effect.forkScoped(Effect.repeat(
    Effect.catchAllCause(sweep, (cause) => Effect.logError(`${what} failed`, cause)),
    Schedule.spaced(interval)
  )))

/** Runs `batch` (it deletes at most `size` rows and answers how many) until one comes back short; answers the total. */
export const inBatches = <E, R>(size: number, batch: Effect.Effect<number, E, R>): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    let total = 0
    while (true) {
      const done = yield* batch
      total += done
      if (done < size) return total
    }
  })
