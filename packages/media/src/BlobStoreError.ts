/**
 * What can go wrong in the blob store. Internal control flow, not part of the HTTP contract: the
 * gateway maps these to its public errors (a missing file, an expired link) where it serves them.
 *
 * @since 1.0.0
 */
import * as Data from "effect/Data"

/**
 * No blob is stored under `key`.
 *
 * @since 1.0.0
 */
export class BlobNotFound extends Data.TaggedError("BlobNotFound")<{
  readonly key: string
}> {
  override get message() {
    return `No blob under key "${this.key}"`
  }
}

/**
 * The store itself failed (disk, network, S3 answer, or a key it refuses), during `op`.
 *
 * @since 1.0.0
 */
export class BlobStoreError extends Data.TaggedError("BlobStoreError")<{
  readonly op: string
  readonly cause: unknown
}> {
  override get message() {
    return `Blob store ${this.op} failed: ${describe(this.cause)}`
  }
}

/**
 * The cause of a `put`'s `BlobStoreError` when the body was not of the length given for it
 * (`contentLength`): nothing was stored, and the same bytes may go again without a length.
 *
 * @since 1.0.0
 */
export class BodyLengthMismatch extends Error {
  constructor(readonly actual: string, readonly expected: number) {
    super(`body is ${actual} bytes, expected ${expected}`)
  }
}

/**
 * Whether a failed `put` failed only because its body was not of the length given for it.
 *
 * @since 1.0.0
 */
export const isLengthMismatch = (error: BlobStoreError): boolean => error.cause instanceof BodyLengthMismatch

/**
 * A signed link whose signature does not verify, or that is not a link at all.
 *
 * @since 1.0.0
 */
export class BlobLinkInvalid extends Data.TaggedError("BlobLinkInvalid")<{}> {}

/**
 * A signed link past its expiry.
 *
 * @since 1.0.0
 */
export class BlobLinkExpired extends Data.TaggedError("BlobLinkExpired")<{
  /** Unix seconds. */
  readonly expiredAt: number
}> {}

/**
 * A one-line account of an unknown failure, for logs and health reports. The AWS SDK leaves the
 * message empty on some HTTP failures (a HEAD has no body), hence the fallbacks.
 *
 * @since 1.0.0
 */
export const describe = (cause: unknown): string => {
  if (cause instanceof Error) {
    const status = (cause as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
    const code = (cause as { code?: unknown }).code
    const text = cause.message && cause.message !== "UnknownError"
      ? cause.message
      : typeof code === "string"
      ? code
      : cause.name
    return status === undefined ? text : `${text} (HTTP ${status})`
  }
  return String(cause)
}
