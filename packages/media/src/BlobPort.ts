/**
 * The blob store port's types: what the `BlobStore` tag holds, apart from the tag and its layers
 * so the implementations depend on the port and the tag on the implementations, never both ways.
 *
 * @since 1.0.0
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { DependencyHealth } from "@wagate/domain/ServiceStatus"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { BlobLinkExpired, BlobLinkInvalid, BlobNotFound, BlobStoreError } from "./BlobStoreError.js"
import type { Disposition } from "./ContentDisposition.js"
import type { NodeBody } from "./NodeBody.js"

/**
 * The bytes to store: in hand, or a stream (an Effect stream, or a Node stream that a store reads
 * without an Effect for every chunk) that may fail with its own error, which `put` passes on
 * untouched, storing nothing.
 *
 * @since 1.0.0
 */
export type BlobBody<E = never> = Uint8Array | Stream.Stream<Uint8Array, E> | NodeBody<E>

/** @since 1.0.0 */
export interface PutOptions {
  readonly contentType: string
  /** When given, a body of any other length fails the write and nothing is stored. */
  readonly contentLength?: number | undefined
}

/** Bytes `start` to `end`, both inclusive. @since 1.0.0 */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/** @since 1.0.0 */
export interface BlobHead {
  readonly size: number
  readonly contentType: string
}

/** @since 1.0.0 */
export interface SignedUrlOptions {
  readonly expiresInSeconds: number
  readonly disposition: Disposition
  /** The name a browser saves the file under; any Unicode. */
  readonly filename?: string | undefined
  /** Overrides the stored content type in the response. */
  readonly contentType?: string | undefined
}

/**
 * A write that never completed: an S3 multipart upload neither completed nor aborted, or a
 * temporary file of the filesystem store, left by a process killed in the middle of a `put`.
 *
 * @since 1.0.0
 */
export interface IncompleteUpload {
  /** The key it was writing; null when the store cannot tell. */
  readonly key: string | null
  /** The store's handle on it (upload id, temporary file name). */
  readonly id: string
  /** When it began (S3) or was last written (filesystem). */
  readonly startedAt: Date
}

/**
 * The blob store port. Keys are `/`-separated paths (see `BlobKey`). Every method is a span named
 * `BlobStore.<method>`.
 *
 * @since 1.0.0
 */
export interface BlobStoreService {
  readonly kind: "filesystem" | "s3" | "memory"

  /**
   * Stores `body` under `key`, replacing what was there. Readers see the old blob or the whole new
   * one, never a part: a failed or interrupted write leaves nothing behind. Stream bodies are never
   * held in memory whole (S3 gets a multipart upload).
   */
  readonly put: <E = never>(
    key: string,
    body: BlobBody<E>,
    options: PutOptions
  ) => Effect.Effect<{ readonly size: number }, BlobStoreError | E>

  /**
   * The blob's bytes, or only those of `range` (both ends inclusive, within the blob); the stream
   * fails with `BlobNotFound` when there is none.
   */
  readonly get: (key: string, range?: ByteRange) => Stream.Stream<Uint8Array, BlobNotFound | BlobStoreError>

  /**
   * `get` as a Node body, for a reader that pipes the bytes on (the driver's upload of a sent
   * file): opened at once, so a missing blob fails here with `BlobNotFound`; a failure on the
   * way is the body's `BlobStoreError`. The stream is destroyed when the scope closes.
   */
  readonly read: (
    key: string,
    range?: ByteRange
  ) => Effect.Effect<NodeBody<BlobStoreError>, BlobNotFound | BlobStoreError, Scope.Scope>

  readonly head: (key: string) => Effect.Effect<Option.Option<BlobHead>, BlobStoreError>

  /** Deleting a key that holds nothing succeeds. */
  readonly delete: (key: string) => Effect.Effect<void, BlobStoreError>

  /**
   * A URL a client can fetch the blob from without credentials until it expires: a presigned S3
   * URL, or `<publicBaseUrl>/files/<token>` answered by `serveSigned` for the other stores.
   */
  readonly signedUrl: (key: string, options: SignedUrlOptions) => Effect.Effect<string, BlobStoreError>

  /**
   * The response for `GET /files/<token>`: the blob streamed with its type, length and disposition.
   * S3 links never come here, so the S3 store refuses every token.
   */
  readonly serveSigned: (
    token: string,
    /** The request's `Range` header: one byte range is answered 206, an impossible one 416. */
    rangeHeader?: string | undefined
  ) => Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    BlobLinkInvalid | BlobLinkExpired | BlobNotFound | BlobStoreError
  >

  /**
   * The incomplete writes under `prefix` (`""`: all, those of unknown key included). A write in
   * progress in another process is listed too: the caller decides which are abandoned.
   */
  readonly incompleteUploads: (prefix: string) => Effect.Effect<ReadonlyArray<IncompleteUpload>, BlobStoreError>

  /** Removes an incomplete write and what it had stored; one already gone is fine. */
  readonly abortUpload: (upload: IncompleteUpload) => Effect.Effect<void, BlobStoreError>

  /** For GET /api/status: `filesystem` / `memory` for the built-in stores, `ok` or `down` for S3. */
  readonly health: Effect.Effect<DependencyHealth>
}
