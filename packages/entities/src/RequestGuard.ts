/**
 * What keeps one request from taking an entity down, and what a storage error means to the
 * client that met it.
 *
 * - A storage error fails the request with a typed error (`storageFailure`): a value PostgreSQL
 *   refuses (SQLSTATE class 22, "data exception", such as U+0000 in text) is the caller's
 *   `invalid_param`; a conflict with another transaction (a deadlock, a serialization failure)
 *   or a database that is unreachable, restarting or out of connections is `capacity` with
 *   Retry-After (try again); anything else is a fault of the gateway, `internal_error`.
 * - A defect (a bug) fails the request with `internal_error`. The entity stays up: the cluster
 *   delivers the requests of an entity that died again, into its rebuilt self, where the same
 *   request would kill it again (which is how one request used to wedge an entity).
 *
 * @since 1.0.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Capacity, InternalError, InvalidParam } from "@wagate/domain/ApiError"
import * as Effect from "effect/Effect"

/** @since 1.0.0 */
export const isSqlError = (e: unknown): e is SqlError =>
  typeof e === "object" && e !== null && (e as { _tag?: unknown })._tag === "SqlError"

/** PostgreSQL's SQLSTATE of the error, when the server answered with one. */
const sqlState = (e: SqlError): string | undefined => {
  const code = (e.cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/** The short reason PostgreSQL gave, without the value itself. */
const reason = (e: SqlError): string => {
  const message = (e.cause as { message?: unknown } | undefined)?.message
  return typeof message === "string" ? message.slice(0, 120) : "storage error"
}

/** Another transaction was in the way: the same request succeeds when tried again at once. */
const CONFLICTS = new Set(["40001", "40P01"])
/**
 * The database cannot serve now: no connection (class 08, or no SQLSTATE at all: refused,
 * reset, timed out), out of resources (class 53), shutting down or starting (57P01-57P03), a
 * statement or lock wait cut short (57014, 55P03).
 */
const unavailable = (state: string | undefined): boolean =>
  state === undefined || state.startsWith("08") || state.startsWith("53") ||
  ["57P01", "57P02", "57P03", "57014", "55P03"].includes(state)

/**
 * The API error of a storage error, by what the client can do about it (see the module's
 * description).
 *
 * @since 1.0.0
 */
export const storageFailure = (e: SqlError): InvalidParam | Capacity | InternalError => {
  const state = sqlState(e)
  if (state?.startsWith("22")) {
    return new InvalidParam({ error: `The request holds a value that cannot be stored (${reason(e)})` })
  }
  if (state !== undefined && CONFLICTS.has(state)) {
    return new Capacity({ error: "The request met another one changing the same data; try again", retryAfter: 1 })
  }
  if (unavailable(state)) return new Capacity({ error: "Storage is unavailable; try again", retryAfter: 5 })
  return new InternalError({ error: "The request failed on a storage error; it was not completed" })
}

/**
 * Logs a storage error at the level its kind calls for: a fault of the gateway as an error, the
 * database busy or away, or a value it refuses, as a warning (it is not the gateway's to fix).
 *
 * @since 1.0.0
 */
export const logStorageError = (message: string, e: SqlError, cause: unknown = e): Effect.Effect<void> =>
  storageFailure(e)._tag === "InternalError" ? Effect.logError(message, cause) : Effect.logWarning(message, cause)

/**
 * Runs one request of an entity: a storage error fails it with its typed error, after
 * `onStorageError` has seen it (a log line, a counter); a defect fails it with `internal_error`
 * (`failed` is its description). `onFault` sees what a defect was, or a storage error that is a
 * fault of the gateway, to keep, count or log it. The entity stays up. A storage error raised as
 * a defect (`orDie`) is a storage error.
 *
 * @since 1.0.0
 */
export const guarded = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: {
    readonly onFault: (fault: string) => Effect.Effect<void>
    readonly onStorageError?: ((e: SqlError) => Effect.Effect<void>) | undefined
    readonly failed: string
  }
): Effect.Effect<A, Exclude<E, SqlError> | InvalidParam | Capacity | InternalError, R> => {
  const storage = (e: SqlError) => {
    const failure = storageFailure(e)
    return Effect.zipRight(
      Effect.zipRight(
        options.onStorageError?.(e) ?? Effect.logWarning("a request failed on storage", e),
        failure._tag === "InternalError" ? options.onFault(`a storage error: ${reason(e)}`) : Effect.void
      ),
      Effect.fail(failure)
    )
  }
  return Effect.catchIf(effect, isSqlError, storage).pipe(
    Effect.catchAllDefect((defect) =>
      isSqlError(defect) ? storage(defect) : Effect.zipRight(
        options.onFault(String(defect).slice(0, 200)),
        Effect.fail(new InternalError({ error: options.failed }))
      )
    )
  ) as Effect.Effect<A, Exclude<E, SqlError> | InvalidParam | Capacity | InternalError, R>
}
