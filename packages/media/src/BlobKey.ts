/**
 * Which keys the blob store accepts: `/`-separated segments, none empty, `.` or `..`, no control
 * characters or backslashes, at most 1024 bytes (the S3 limit). The filesystem store maps keys to
 * paths, so this is what keeps a key inside its directory; every store applies the same rule so
 * a key that works in tests works in production.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import { BlobStoreError } from "./BlobStoreError.js"

/** @since 1.0.0 */
export const MAX_BYTES = 1024

const FORBIDDEN = /[\u0000-\u001f\u007f\\]/

/**
 * Why `key` is refused, or `undefined` when it is acceptable.
 *
 * @since 1.0.0
 */
export const problem = (key: string): string | undefined => {
  if (key.length === 0) return "empty key"
  if (Buffer.byteLength(key, "utf8") > MAX_BYTES) return `key longer than ${MAX_BYTES} bytes`
  if (FORBIDDEN.test(key)) return "control character or backslash in key"
  for (const segment of key.split("/")) {
    if (segment === "" || segment === "." || segment === "..") return `bad segment "${segment}" in key`
  }
  return undefined
}

/**
 * Succeeds with `key` when it is acceptable, fails with a `BlobStoreError` for `op` otherwise.
 *
 * @since 1.0.0
 */
export const check = (key: string, op: string): Effect.Effect<string, BlobStoreError> => {
  const reason = problem(key)
  return reason === undefined
    ? Effect.succeed(key)
    : Effect.fail(new BlobStoreError({ op, cause: new Error(`${reason}: ${JSON.stringify(key)}`) }))
}
