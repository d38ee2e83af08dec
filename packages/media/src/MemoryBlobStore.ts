/**
 * The blob store in this process's memory, for tests of other packages. Same keys, errors and
 * links as the filesystem store.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Readable } from "node:stream"
import * as BlobKey from "./BlobKey.js"
import type { BlobBody, BlobStoreService, ByteRange, PutOptions } from "./BlobPort.js"
import { BlobNotFound, BlobStoreError } from "./BlobStoreError.js"
import * as GatewayLinks from "./GatewayLinks.js"
import * as MeasuredBody from "./MeasuredBody.js"
import * as NodeBody from "./NodeBody.js"

/** @since 1.0.0 */
export type Options = GatewayLinks.Options

interface Stored {
  readonly bytes: Uint8Array
  readonly contentType: string
}

/** @since 1.0.0 */
export const make = (options: Options): Effect.Effect<BlobStoreService> =>
  Effect.sync(() => {
    const blobs = new Map<string, Stored>()

    const put = Effect.fn("BlobStore.put")(function*(key: string, body: BlobBody<unknown>, putOptions: PutOptions) {
      yield* BlobKey.check(key, "put")
      const measured = yield* MeasuredBody.make(body, putOptions.contentLength)
      const chunks = yield* Stream.runCollect(measured.stream)
      // Copied, so a caller reusing its buffer cannot change what was stored.
      const bytes = new Uint8Array(yield* measured.size)
      let offset = 0
      for (const chunk of chunks) {
        bytes.set(chunk, offset)
        offset += chunk.byteLength
      }
      blobs.set(key, { bytes, contentType: putOptions.contentType })
      return { size: bytes.byteLength }
    })

    const bytesOf = (key: string, range?: ByteRange) =>
      Effect.flatMap(BlobKey.check(key, "get"), () => {
        const stored = blobs.get(key)
        return stored === undefined
          ? Effect.fail(new BlobNotFound({ key }))
          : Effect.succeed(range === undefined ? stored.bytes.slice() : stored.bytes.slice(range.start, range.end + 1))
      })

    const get = (key: string, range?: ByteRange) =>
      Stream.fromEffect(bytesOf(key, range)).pipe(Stream.withSpan("BlobStore.get", { attributes: { key } }))

    const read = (key: string, range?: ByteRange) =>
      Effect.flatMap(bytesOf(key, range), (bytes) =>
        Effect.map(
          Effect.acquireRelease(
            Effect.sync(() => Readable.from(bytes.byteLength === 0 ? [] : [Buffer.from(bytes)])),
            (readable) => Effect.sync(() => readable.destroy())
          ),
          (readable) => NodeBody.make(readable, (cause) => new BlobStoreError({ op: "get", cause }))
        )).pipe(Effect.withSpan("BlobStore.read", { attributes: { key } }))

    const head = Effect.fn("BlobStore.head")(function*(key: string) {
      yield* BlobKey.check(key, "head")
      return Option.map(
        Option.fromNullable(blobs.get(key)),
        (stored) => ({ size: stored.bytes.byteLength, contentType: stored.contentType })
      )
    })

    const delete_ = Effect.fn("BlobStore.delete")(function*(key: string) {
      yield* BlobKey.check(key, "delete")
      blobs.delete(key)
    })

    return {
      kind: "memory",
      // Effect.fn cannot keep the body's error type parameter; the body's errors do pass through as is.
      put: put as BlobStoreService["put"],
      get,
      read,
      head,
      delete: delete_,
      // A put here is one assignment: nothing is ever left half-written.
      incompleteUploads: () => Effect.succeed([]),
      abortUpload: () => Effect.void,
      ...GatewayLinks.make(options, { head, get }),
      health: Effect.succeed({ status: "memory", latency_ms: null, error: null })
    } as const
  })
