/**
 * The rows of a statement decoded through a schema. A row that does not decode is a defect (the
 * store's own columns are not what its code expects), so callers keep the statement's
 * `SqlError` as their only failure.
 *
 * @since 1.0.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const decoded = <A, I, R>(
  Result: Schema.Schema<A, I, R>,
  statement: Statement.Statement<unknown>
): Effect.Effect<ReadonlyArray<A>, SqlError, R> =>
  SqlSchema.findAll({ Request: Schema.Void, Result, execute: () => statement })(undefined).pipe(
    Effect.catchTag("ParseError", Effect.die)
  )
