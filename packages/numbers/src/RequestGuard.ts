/**
 * What keeps one request from taking a number down (`@wagate/entities/RequestGuard`), with the
 * number's own bookkeeping: storage errors and defects of its requests are counted, and a defect
 * is kept as the number's fault for operators (`numbers.fault`, shown on the operator API's
 * link view).
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Capacity, InternalError, InvalidParam } from "@wagate/domain/ApiError"
import * as Guard from "@wagate/entities/RequestGuard"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/** Requests that failed on a defect inside a number's entity (which stayed up). */
export const requestDefects = Metric.counter("wagate_number_request_defects", {
  description: "Requests that failed on a defect inside a number's entity; the entity stayed up",
  incremental: true
})

/** Storage errors that failed one request (the entity stayed up). */
export const storageFailures = Metric.counter("wagate_number_storage_failures", {
  description: "Requests to a number's entity that failed on a storage error",
  incremental: true
})

const counted = (e: SqlError) =>
  Effect.zipRight(Metric.increment(storageFailures), Effect.logWarning("number request failed on storage", e))

/**
 * Runs one request of a number's entity: a storage error fails it with a typed error and is
 * counted; a defect fails it with `internal_error`, is counted and kept as the number's fault
 * (`onFault`), as is a storage error that is a fault of the gateway; the entity stays up.
 */
export const guarded = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  onFault: (fault: string) => Effect.Effect<void>
): Effect.Effect<A, Exclude<E, SqlError> | InvalidParam | Capacity | InternalError, R> =>
  Guard.guarded(effect, {
    onStorageError: counted,
    onFault: (defect) =>
      Effect.zipRight(Metric.increment(requestDefects), onFault(`a request failed inside the number: ${defect}`)),
    failed: "The number failed on this request; it was not completed"
  })
