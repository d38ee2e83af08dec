/**
 * The rows of a statement decoded through a schema. A row that does not decode is a defect (the
 * store's own columns are not what its code expects), so callers keep the statement's
 * `SqlError` as their only failure.
 *
 * The decoder of a row schema is built once and kept with the schema: building one compiles a
 * parser, which costs ten times the decoding of a few rows. Row schemas are therefore module
 * constants, never built inside a call.
 *
 * @since 1.0.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { ParseError } from "effect/ParseResult"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

type Decoder = (rows: unknown) => Effect.Effect<ReadonlyArray<unknown>, ParseError, unknown>

const decoders = new WeakMap<Schema.Schema.Any, Decoder>()

const decoderOf = <A, I, R>(Result: Schema.Schema<A, I, R>) => {
  let decoder = decoders.get(Result)
  if (decoder === undefined) {
    decoder = Schema.decodeUnknown(Schema.Array(Result))
    decoders.set(Result, decoder)
  }
  return decoder as (rows: unknown) => Effect.Effect<ReadonlyArray<A>, ParseError, R>
}

/** @since 1.0.0 */
export const decoded = <A, I, R>(
  Result: Schema.Schema<A, I, R>,
  statement: Statement.Statement<unknown>
): Effect.Effect<ReadonlyArray<A>, SqlError, R> =>
  Effect.flatMap(statement, decoderOf(Result)).pipe(Effect.catchTag("ParseError", Effect.die))
