/**
 * What keeps one request from taking a number down.
 *
 * - A storage error of a request fails that request with a typed error: a value PostgreSQL
 *   refuses (SQLSTATE class 22, "data exception", such as U+0000 in text) is the caller's
 *   `invalid_param`; anything else is `capacity` (try again). The entity stays up.
 * - A defect (a bug) fails the request with `internal_error`; the number keeps the fault for
 *   operators (`numbers.fault`, shown on the operator API's link view) and the metrics count it
 *   (`wagate_number_request_defects`). The entity stays up, so the cluster never delivers the
 *   request again into a rebuilt entity (which is how one request used to wedge a number).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Capacity, InternalError, InvalidParam } from "@wagate/domain/ApiError"
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

const isSqlError = (e: unknown): e is SqlError =>
  typeof e === "object" && e !== null && (e as { _tag?: unknown })._tag === "SqlError"

const sqlState = (e: SqlError): string | undefined => {
  const code = (e.cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

/** The short reason PostgreSQL gave, without the value itself. */
const reason = (e: SqlError): string => {
  const message = (e.cause as { message?: unknown } | undefined)?.message
  return typeof message === "string" ? message.slice(0, 120) : "storage error"
}

/** The typed failure of a storage error of one request. */
export const storageFailure = (e: SqlError): InvalidParam | Capacity =>
  sqlState(e)?.startsWith("22")
    ? new InvalidParam({ error: `The request holds a value that cannot be stored (${reason(e)})` })
    : new Capacity({ error: "Storage is unavailable; try again", retryAfter: 5 })

/** Fails the request with a typed error for any storage error, instead of failing with `SqlError`. */
export const typedStorage = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError> | InvalidParam | Capacity, R> =>
  Effect.catchIf(effect, isSqlError, (e) =>
    Effect.zipRight(
      Effect.zipRight(Metric.increment(storageFailures), Effect.logWarning("number request failed on storage", e)),
      Effect.fail(storageFailure(e))
    )) as Effect.Effect<A, Exclude<E, SqlError> | InvalidParam | Capacity, R>

/**
 * Runs one request of a number's entity: a storage error fails it with a typed error; a defect
 * fails it with `internal_error`, is counted and kept as the number's fault (`onFault`), and the
 * entity stays up. The cluster delivers again the requests of an entity that died, into its
 * rebuilt self, where the same request would kill it again (and a rebuild can wait for ever on
 * the dead entity's own calls to itself): so a request never kills its entity.
 */
export const guarded = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  onFault: (fault: string) => Effect.Effect<void>
): Effect.Effect<A, Exclude<E, SqlError> | InvalidParam | Capacity | InternalError, R> =>
  typedStorage(effect).pipe(
    Effect.catchAllDefect((defect) => {
      const fault = `a request failed inside the number: ${String(defect).slice(0, 200)}`
      return Effect.zipRight(
        Effect.zipRight(Metric.increment(requestDefects), onFault(fault)),
        Effect.fail(new InternalError({ error: "The number failed on this request; it was not completed" }))
      )
    })
  )
