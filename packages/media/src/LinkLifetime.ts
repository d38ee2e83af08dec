/**
 * How long a signed link may live: whole seconds, from one second to seven days, the longest S3
 * presigns. Every store applies the same rule, so a lifetime that works in tests works on S3.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import { BlobStoreError } from "./BlobStoreError.js"

/** @since 1.0.0 */
export const MAX_SECONDS = 7 * 24 * 60 * 60

/**
 * Why `seconds` is refused, or `undefined` when it is acceptable.
 *
 * @since 1.0.0
 */
export const problem = (seconds: number): string | undefined =>
  Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_SECONDS
    ? undefined
    : `link lifetime must be whole seconds from 1 to ${MAX_SECONDS}, not ${seconds}`

/**
 * Succeeds with `seconds` when acceptable, fails with a `BlobStoreError` for `op` otherwise.
 *
 * @since 1.0.0
 */
export const check = (seconds: number, op: string): Effect.Effect<number, BlobStoreError> => {
  const reason = problem(seconds)
  return reason === undefined
    ? Effect.succeed(seconds)
    : Effect.fail(new BlobStoreError({ op, cause: new Error(reason) }))
}
