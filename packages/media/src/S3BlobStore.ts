/**
 * Blobs in an S3-compatible bucket. Stream bodies go up as multipart uploads of `PART_SIZE`
 * parts, so archives of several gigabytes never sit in memory; links are presigned GETs.
 *
 * @since 1.0.0
 */
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig
} from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Readable } from "node:stream"
import * as BlobKey from "./BlobKey.js"
import type { BlobBody, BlobStoreService, ByteRange, IncompleteUpload, PutOptions, SignedUrlOptions } from "./BlobPort.js"
import { BlobLinkInvalid, BlobNotFound, BlobStoreError, describe } from "./BlobStoreError.js"
import * as ContentDisposition from "./ContentDisposition.js"
import * as LinkLifetime from "./LinkLifetime.js"
import * as MeasuredBody from "./MeasuredBody.js"
import * as NodeBody from "./NodeBody.js"
import * as TransferMemory from "./TransferMemory.js"

/** @since 1.0.0 */
export interface Options {
  /** Unset for AWS itself; the store's URL (`http://minio:9000`) for anything else. */
  readonly endpoint?: string | undefined
  readonly region: string
  readonly bucket: string
  readonly accessKeyId: Redacted.Redacted<string>
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly forcePathStyle: boolean
  /** The S3 address clients use, when it is not the gateway's (presigned links name this host). */
  readonly publicEndpoint?: string | undefined
  /** How long `health` waits for HeadBucket; 2 seconds unless set. */
  readonly healthTimeout?: Duration.DurationInput | undefined
  /**
   * How long a request may go without a byte moving either way before it fails as the store
   * being unavailable; 30 seconds unless set. A transfer that keeps moving is never cut short.
   */
  readonly idleTimeoutMs?: number | undefined
}

/** How long connecting to the store may take before a request fails. */
const CONNECT_TIMEOUT_MS = 5_000

/**
 * Multipart part size: the smallest S3 accepts, so an upload holds at most `QUEUE_SIZE` parts in
 * memory.
 *
 * @since 1.0.0
 */
export const PART_SIZE = 5 * 1024 * 1024

/** @since 1.0.0 */
export const QUEUE_SIZE = 4

/** The largest body S3 takes in one PutObject (5 GiB). */
const MAX_SINGLE_PUT = 5 * 1024 * 1024 * 1024

const isMissing = (error: unknown) => {
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } } | null
  return e?.name === "NotFound" || e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404
}

/** @since 1.0.0 */
export const make = (options: Options): Effect.Effect<BlobStoreService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const Bucket = options.bucket
    const client = (endpoint: string | undefined, overrides: Partial<S3ClientConfig> = {}) =>
      Effect.acquireRelease(
        Effect.sync(() =>
          new S3Client({
            region: options.region,
            endpoint,
            forcePathStyle: options.forcePathStyle,
            credentials: {
              accessKeyId: Redacted.value(options.accessKeyId),
              secretAccessKey: Redacted.value(options.secretAccessKey)
            },
            // The SDK's default checksums (CRC32 on every request) are refused by several
            // S3-compatible stores; checksums only where S3 requires them.
            requestChecksumCalculation: "WHEN_REQUIRED",
            responseChecksumValidation: "WHEN_REQUIRED",
            // Without limits a store that stops answering (a partition, a stalled server) holds
            // every transfer, and the sends and downloads waiting on them, for as long as it stalls.
            requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, socketTimeout: options.idleTimeoutMs ?? 30_000 },
            ...overrides
          })
        ),
        (c) => Effect.sync(() => c.destroy())
      )
    // One attempt per request: a download, a send or a health check waits on it, and the SDK's
    // default (3 attempts with backoff) held each of them three idle limits, about 99 s, while
    // the store stalled. Callers that can try again later (the purge, the janitor) do.
    const s3 = yield* client(options.endpoint, { maxAttempts: 1 })
    // Multipart parts are held in memory and can go again, and a part lost should not fail a
    // whole archive: those keep the SDK's retries.
    const uploads = yield* client(options.endpoint)
    // Presigning is local arithmetic; its client only names the host clients will call.
    const presigner = options.publicEndpoint === undefined ? s3 : yield* client(options.publicEndpoint)

    const call = <A>(op: string, send: (abortSignal: AbortSignal) => Promise<A>) =>
      Effect.tryPromise({ try: send, catch: (cause) => new BlobStoreError({ op, cause }) })
    const missing = (error: BlobStoreError) => isMissing(error.cause)

    const put = Effect.fn("BlobStore.put")(function*(key: string, body: BlobBody<unknown>, putOptions: PutOptions) {
      yield* BlobKey.check(key, "put")
      // The upload only sees a broken Readable; this keeps the body's own error to report it.
      const bodyFailure = yield* Deferred.make<never, unknown>()
      // A Node body is piped into the upload as it is; another goes through an Effect stream.
      const measured = NodeBody.isNodeBody(body)
        ? MeasuredBody.node(body, putOptions.contentLength, (error) => Deferred.unsafeDone(bodyFailure, Exit.fail(error)))
        : yield* Effect.flatMap(MeasuredBody.make(body, putOptions.contentLength), (measured) =>
          Effect.map(
            NodeStream.toReadable(
              measured.stream.pipe(Stream.tapErrorCause((cause) => Deferred.failCause(bodyFailure, cause)))
            ),
            (readable) => ({ readable, size: measured.size })
          ))
      const { readable } = measured
      // The body's error reaches the caller through `bodyFailure`; the stream's own report of it
      // must not go unhandled (PutObject pipes the stream without listening for errors).
      readable.on("error", () => {})
      const length = putOptions.contentLength
      // A body of known length goes up as one streamed PutObject: no part is ever buffered.
      const single = length !== undefined && length <= MAX_SINGLE_PUT
      const upload = single ? undefined : new Upload({
        client: uploads,
        params: { Bucket, Key: key, Body: readable, ContentType: putOptions.contentType },
        partSize: PART_SIZE,
        queueSize: QUEUE_SIZE,
        // On failure the multipart upload is aborted, so no orphaned parts are billed.
        leavePartsOnError: false
      })
      yield* Effect.tryPromise({
        try: (signal) => {
          signal.addEventListener("abort", () => {
            void upload?.abort()
            readable.destroy()
          })
          return upload !== undefined ? upload.done() : s3.send(
            new PutObjectCommand({
              Bucket,
              Key: key,
              Body: readable,
              ContentLength: length,
              ContentType: putOptions.contentType
            }),
            { abortSignal: signal }
          )
        },
        catch: (cause) => new BlobStoreError({ op: "put", cause })
      }).pipe(
        Effect.catchAll((error) =>
          Effect.flatMap(
            Deferred.isDone(bodyFailure),
            (failed) => failed ? Deferred.await(bodyFailure) : Effect.fail(error)
          )
        ),
        // A body that fails (short of its announced length) leaves a PutObject waiting for the
        // rest: the body's failure ends the request.
        (put) => single ? Effect.raceFirst(put, Deferred.await(bodyFailure)) : put,
        // Whatever ended the upload, stop the body (it may still hold a file or a socket open).
        Effect.ensuring(Effect.sync(() => readable.destroy()))
      )
      return { size: yield* measured.size }
    })

    const read = (key: string, range?: ByteRange) =>
      Effect.gen(function*() {
        yield* BlobKey.check(key, "get")
        const Range = range === undefined ? undefined : `bytes=${range.start}-${range.end}`
        const object = yield* Effect.acquireRelease(
          call("get", (abortSignal) => s3.send(new GetObjectCommand({ Bucket, Key: key, Range }), { abortSignal })),
          (object) => Effect.sync(() => object.Body instanceof Readable && object.Body.destroy())
        ).pipe(Effect.catchIf(missing, () => Effect.fail(new BlobNotFound({ key }))))
        const body = object.Body
        if (!(body instanceof Readable)) {
          return yield* new BlobStoreError({ op: "get", cause: new Error("S3 answered without a body stream") })
        }
        return TransferMemory.counted(NodeBody.make(body, (cause) => new BlobStoreError({ op: "get", cause })))
      }).pipe(Effect.withSpan("BlobStore.read", { attributes: { key } }))

    const get = (key: string, range?: ByteRange) =>
      Stream.unwrapScoped(Effect.map(read(key, range), NodeBody.toStream)).pipe(
        Stream.withSpan("BlobStore.get", { attributes: { key } })
      )

    const head = Effect.fn("BlobStore.head")(function*(key: string) {
      yield* BlobKey.check(key, "head")
      return yield* call("head", (abortSignal) => s3.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal }))
        .pipe(
          Effect.map((found) =>
            Option.some({
              size: found.ContentLength ?? 0,
              contentType: found.ContentType ?? "application/octet-stream"
            })
          ),
          Effect.catchIf(missing, () => Effect.succeedNone)
        )
    })

    const delete_ = Effect.fn("BlobStore.delete")(function*(key: string) {
      yield* BlobKey.check(key, "delete")
      yield* call("delete", (abortSignal) => s3.send(new DeleteObjectCommand({ Bucket, Key: key }), { abortSignal }))
    })

    let warnedUnlisted = false
    const notImplemented = (error: BlobStoreError) => (error.cause as { name?: string } | null)?.name === "NotImplemented"
    const incompleteUploads = Effect.fn("BlobStore.incompleteUploads")(function*(prefix: string) {
      const found: Array<IncompleteUpload> = []
      let KeyMarker: string | undefined
      let UploadIdMarker: string | undefined
      for (;;) {
        const listed = yield* call("incompleteUploads", (abortSignal) =>
          s3.send(new ListMultipartUploadsCommand({ Bucket, Prefix: prefix, KeyMarker, UploadIdMarker }), { abortSignal }))
          .pipe(Effect.map(Option.some), Effect.catchIf(notImplemented, () => Effect.succeedNone))
        if (Option.isNone(listed)) {
          // Some S3-compatible stores (s3rver among them) cannot list them: the bucket's
          // AbortIncompleteMultipartUpload lifecycle rule is then what reclaims them.
          if (!warnedUnlisted) {
            warnedUnlisted = true
            yield* Effect.logWarning("the S3 store cannot list incomplete multipart uploads; set the bucket's AbortIncompleteMultipartUpload lifecycle rule")
          }
          return found
        }
        const page = listed.value
        for (const upload of page.Uploads ?? []) {
          if (upload.Key === undefined || upload.UploadId === undefined) continue
          found.push({ key: upload.Key, id: upload.UploadId, startedAt: upload.Initiated ?? new Date(0) })
        }
        if (page.IsTruncated !== true) return found
        KeyMarker = page.NextKeyMarker
        UploadIdMarker = page.NextUploadIdMarker
      }
    })

    const abortUpload = Effect.fn("BlobStore.abortUpload")(function*(upload: IncompleteUpload) {
      if (upload.key === null) return
      const Key = upload.key
      yield* call("abortUpload", (abortSignal) =>
        s3.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: upload.id }), { abortSignal })).pipe(
          // Completed or aborted meanwhile.
          Effect.catchIf((e) => missing(e) || (e.cause as { name?: string })?.name === "NoSuchUpload", () => Effect.void)
        )
    })

    const signedUrl = Effect.fn("BlobStore.signedUrl")(function*(key: string, link: SignedUrlOptions) {
      yield* BlobKey.check(key, "signedUrl")
      yield* LinkLifetime.check(link.expiresInSeconds, "signedUrl")
      const now = yield* Clock.currentTimeMillis
      const command = new GetObjectCommand({
        Bucket,
        Key: key,
        ResponseContentDisposition: ContentDisposition.format(link.disposition, link.filename),
        ResponseContentType: link.contentType
      })
      return yield* call("signedUrl", () =>
        getSignedUrl(presigner, command, { expiresIn: link.expiresInSeconds, signingDate: new Date(now) }))
    })

    const healthTimeout = options.healthTimeout ?? "2 seconds"
    const health = Effect.timed(
      call("health", (abortSignal) => s3.send(new HeadBucketCommand({ Bucket }), { abortSignal })).pipe(
        Effect.timeoutFail({
          duration: healthTimeout,
          onTimeout: () =>
            new BlobStoreError({ op: "health", cause: new Error(`no answer within ${Duration.format(healthTimeout)}`) })
        })
      )
    ).pipe(
      Effect.map(([elapsed]) => ({
        status: "ok" as const,
        latency_ms: Math.round(Duration.toMillis(elapsed) * 10) / 10,
        error: null
      })),
      Effect.catchAll((error) =>
        Effect.succeed({ status: "down" as const, latency_ms: null, error: describe(error.cause) })
      ),
      Effect.withSpan("BlobStore.health")
    )

    return {
      kind: "s3",
      // Effect.fn cannot keep the body's error type parameter; the body's errors do pass through as is.
      put: put as BlobStoreService["put"],
      get,
      read,
      head,
      delete: delete_,
      incompleteUploads,
      abortUpload,
      signedUrl,
      // Links to S3 are answered by S3; a token reaching the gateway was not made by this store.
      serveSigned: () => Effect.fail(new BlobLinkInvalid()).pipe(Effect.withSpan("BlobStore.serveSigned")),
      health
    } as const
  })
