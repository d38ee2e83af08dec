/**
 * Blobs as files under a directory: `objects/<key>` holds the bytes, `meta/<key>` the content
 * type, `tmp/` writes in progress. A write lands in `tmp/` (synced to disk) and is renamed into
 * place, so a reader sees the old blob or the whole new one, and a crash leaves only `tmp/` junk.
 *
 * Keys are paths, so one key cannot be a blob and a prefix of other blobs at once (`a` and `a/b`):
 * the second write fails. Deleting a blob removes the directories it leaves empty, so a name can
 * turn from one into the other as on S3.
 *
 * @since 1.0.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type { PlatformError } from "@effect/platform/Error"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import { createWriteStream } from "node:fs"
import { open, rmdir } from "node:fs/promises"
import { pipeline } from "node:stream"
import { dirname, join, resolve, sep } from "node:path"
import * as BlobKey from "./BlobKey.js"
import type { BlobBody, BlobStoreService, ByteRange, IncompleteUpload, PutOptions } from "./BlobPort.js"
import { BlobNotFound, BlobStoreError, describe } from "./BlobStoreError.js"
import * as GatewayLinks from "./GatewayLinks.js"
import * as MeasuredBody from "./MeasuredBody.js"
import * as NodeBody from "./NodeBody.js"
import * as TransferMemory from "./TransferMemory.js"

/** @since 1.0.0 */
export interface Options extends GatewayLinks.Options {
  readonly dir: string
}

const Meta = Schema.parseJson(Schema.Struct({ contentType: Schema.String }))
const encodeMeta = Schema.encodeSync(Meta)
const decodeMeta = Schema.decodeUnknownOption(Meta)
const DEFAULT_TYPE = "application/octet-stream"

const isNotFound = (error: PlatformError) => error._tag === "SystemError" && error.reason === "NotFound"

const errno = (error: PlatformError): unknown =>
  error._tag === "SystemError" ? (error.cause as { readonly code?: unknown } | undefined)?.code : undefined

/**
 * Besides nothing there, what says the path holds no blob: a file where a directory would be
 * (`a/b` below the blob `a`), or a directory (`a`, a prefix of blobs only).
 */
const NO_BLOB_HERE = ["ENOTDIR", "EISDIR", "ERR_FS_EISDIR"]

/** The path holds no blob. */
const isAbsent = (error: PlatformError) => isNotFound(error) || NO_BLOB_HERE.includes(errno(error) as string)

/** @since 1.0.0 */
export const make = (
  options: Options
): Effect.Effect<BlobStoreService, BlobStoreError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const root = resolve(options.dir)
    const objectPath = (key: string) => join(root, "objects", key)
    const metaPath = (key: string) => join(root, "meta", key)
    // A temporary file names when it began and the key it writes (when the name fits), so what a
    // killed process left can be told apart: `<start ms in base 36>_<uuid>.<key in base64url>`.
    // The start is in the name because the file's own times do not keep it: the modification
    // time moves with every write, and not every filesystem records a birth time.
    const tmpPath = (key?: string) => {
      const named = key === undefined ? "" : `.${Buffer.from(key).toString("base64url")}`
      return join(root, "tmp", `${Date.now().toString(36)}_${randomUUID()}${named.length <= 200 ? named : ""}`)
    }
    const startOf = (name: string): Option.Option<Date> => {
      const match = /^([0-9a-z]{1,11})_/.exec(name)
      const ms = match === null ? NaN : parseInt(match[1]!, 36)
      return Number.isSafeInteger(ms) && ms > 0 ? Option.some(new Date(ms)) : Option.none()
    }
    const failed = (op: string) => (cause: unknown) => new BlobStoreError({ op, cause })
    // Commits, deletes and heads of this process take turns, so a blob's bytes and type change
    // together: two puts of one key never leave one's bytes with the other's type.
    const lock = yield* Effect.makeSemaphore(1)
    const serialized = <A, E>(effect: Effect.Effect<A, E>) => lock.withPermits(1)(effect)

    yield* Effect.forEach(["objects", "meta", "tmp"], (sub) => fs.makeDirectory(join(root, sub), { recursive: true }))
      .pipe(Effect.mapError(failed("open")))

    const writeFile = <E>(path: string, body: Stream.Stream<Uint8Array, E>) =>
      Effect.scoped(Effect.gen(function*() {
        const file = yield* fs.open(path, { flag: "wx", mode: 0o600 }).pipe(Effect.mapError(failed("put")))
        yield* Stream.runForEach(body, (chunk) =>
          // writeAll treats a write of zero bytes as a failure, and a stream may carry empty chunks.
          chunk.byteLength === 0 ? Effect.void : file.writeAll(chunk).pipe(Effect.mapError(failed("put"))))
        yield* file.sync.pipe(Effect.mapError(failed("put")))
      }))

    /**
     * A Node body written by Node's own piping, counted and checked as it passes (no Effect for
     * every chunk), and synced before the file is closed. It ends, failed or interrupted, only
     * once the file is closed: a file still being opened would otherwise appear after the staged
     * files were removed, and stay behind in `tmp/`.
     */
    const writeNodeFile = <E>(path: string, body: NodeBody.NodeBody<E>, expected: number | undefined) =>
      Effect.async<number, E | BlobStoreError>((resume) => {
        let bodyFailure: { readonly error: E | BlobStoreError } | undefined
        const measured = MeasuredBody.node(body, expected, (error) => void (bodyFailure ??= { error }))
        const file = createWriteStream(path, { flags: "wx", mode: 0o600, flush: true })
        const closed = (then: () => void) => file.closed ? then() : void file.once("close", then)
        pipeline(measured.readable, file, (error) =>
          closed(() => {
            if (bodyFailure !== undefined) return resume(Effect.fail(bodyFailure.error))
            if (error) return resume(Effect.fail(failed("put")(error)))
            resume(measured.size)
          }))
        return Effect.async<void>((stopped) => {
          measured.readable.destroy()
          closed(() => stopped(Effect.void))
        })
      })

    const readType = (key: string) =>
      fs.readFileString(metaPath(key)).pipe(
        Effect.map((text) =>
          Option.match(decodeMeta(text), { onNone: () => DEFAULT_TYPE, onSome: (meta) => meta.contentType })
        ),
        Effect.catchIf(isAbsent, () => Effect.succeed(DEFAULT_TYPE))
      )

    /**
     * Renames the staged files into place: type first, so whoever sees the bytes sees their type.
     * Uninterruptible, so an interrupted put never leaves the new type beside the old bytes.
     */
    const commit = (key: string, staged: { readonly data: string; readonly meta: string }) =>
      Effect.zipRight(place(staged.meta, metaPath(key)), place(staged.data, objectPath(key))).pipe(
        Effect.uninterruptible,
        serialized
      )

    const place = (from: string, to: string) =>
      Effect.zipRight(fs.makeDirectory(dirname(to), { recursive: true }), fs.rename(from, to)).pipe(
        // Another process may prune the directory between its creation and the rename.
        Effect.retry({ times: 3, while: isNotFound })
      )

    /** Removes the directories above `path` that are now empty, up to (not including) `top`. */
    const prune = (top: string, path: string) =>
      Effect.promise(async () => {
        for (let dir = dirname(path); dir.startsWith(top + sep); dir = dirname(dir)) {
          // rmdir refuses a directory that is not empty, so a blob written meanwhile stays.
          const removed = await rmdir(dir).then(() => true, () => false)
          if (!removed) return
        }
      })

    /** Stages both files, commits them, and removes whatever is left in `tmp/` however it ends. */
    const stageAndCommit = <A, E>(
      key: string,
      op: string,
      stage: (staged: { readonly data: string; readonly meta: string }) => Effect.Effect<A, E>
    ) => {
      const staged = { data: tmpPath(key), meta: tmpPath(key) }
      return stage(staged).pipe(
        Effect.tap(() => commit(key, staged).pipe(Effect.mapError(failed(op)))),
        Effect.ensuring(Effect.ignore(Effect.all([fs.remove(staged.data), fs.remove(staged.meta)], { mode: "either" })))
      )
    }

    const put = Effect.fn("BlobStore.put")(function*(key: string, body: BlobBody<unknown>, putOptions: PutOptions) {
      yield* BlobKey.check(key, "put")
      // A Node body is piped into the file as it is; another goes through an Effect stream.
      const write = (path: string) =>
        NodeBody.isNodeBody(body)
          ? writeNodeFile(path, body, putOptions.contentLength)
          : Effect.flatMap(MeasuredBody.make(body, putOptions.contentLength), (measured) =>
            Effect.zipRight(writeFile(path, measured.stream), measured.size))
      return yield* stageAndCommit(key, "put", (staged) =>
        Effect.gen(function*() {
          const size = yield* write(staged.data)
          yield* fs.writeFileString(staged.meta, encodeMeta({ contentType: putOptions.contentType }), { mode: 0o600 })
            .pipe(Effect.mapError(failed("put")))
          return { size }
        }))
    })

    const read = (key: string, range?: ByteRange) =>
      Effect.gen(function*() {
        yield* BlobKey.check(key, "get")
        const absent = (cause: unknown) => {
          const code = (cause as { readonly code?: unknown }).code as string
          return code === "ENOENT" || NO_BLOB_HERE.includes(code) ? new BlobNotFound({ key }) : failed("get")(cause)
        }
        const readable = yield* Effect.acquireRelease(
          Effect.tryPromise({
            try: async () => {
              const handle = await open(objectPath(key), "r")
              // A directory opens too (a prefix of blobs), and holds no blob.
              if (!(await handle.stat()).isFile()) {
                await handle.close()
                throw Object.assign(new Error(`${key} is a directory`), { code: "EISDIR" })
              }
              return handle.createReadStream(range === undefined ? {} : { start: range.start, end: range.end })
            },
            catch: absent
          }),
          (readable) => Effect.sync(() => readable.destroy())
        )
        return TransferMemory.counted(NodeBody.make(readable, failed("get")))
      }).pipe(Effect.withSpan("BlobStore.read", { attributes: { key } }))

    const get = (key: string, range?: ByteRange) =>
      Stream.unwrapScoped(Effect.map(read(key, range), NodeBody.toStream)).pipe(
        Stream.withSpan("BlobStore.get", { attributes: { key } })
      )

    const head = Effect.fn("BlobStore.head")(function*(key: string) {
      yield* BlobKey.check(key, "head")
      return yield* serialized(Effect.gen(function*() {
        const info = yield* fs.stat(objectPath(key)).pipe(
          Effect.map(Option.some),
          Effect.catchIf(isAbsent, () => Effect.succeedNone),
          Effect.mapError(failed("head"))
        )
        if (Option.isNone(info) || info.value.type !== "File") return Option.none()
        const contentType = yield* readType(key).pipe(Effect.mapError(failed("head")))
        return Option.some({ size: Number(info.value.size), contentType })
      }))
    })

    const delete_ = Effect.fn("BlobStore.delete")(function*(key: string) {
      yield* BlobKey.check(key, "delete")
      yield* serialized(Effect.gen(function*() {
        // Bytes first: a type without bytes is invisible, bytes without a type would not be.
        for (const [top, path] of [[join(root, "objects"), objectPath(key)], [join(root, "meta"), metaPath(key)]]) {
          yield* fs.remove(path).pipe(Effect.catchIf(isAbsent, () => Effect.void), Effect.mapError(failed("delete")))
          yield* prune(top, path)
        }
      }))
    })

    const incompleteUploads = Effect.fn("BlobStore.incompleteUploads")(function*(prefix: string) {
      const names = yield* fs.readDirectory(join(root, "tmp")).pipe(Effect.mapError(failed("incompleteUploads")))
      const found: Array<IncompleteUpload> = []
      for (const name of names) {
        const dot = name.indexOf(".")
        const key = dot < 0 ? null : Buffer.from(name.slice(dot + 1), "base64url").toString()
        if (prefix !== "" && (key === null || !key.startsWith(prefix))) continue
        const info = yield* fs.stat(join(root, "tmp", name)).pipe(
          Effect.map(Option.some),
          // Renamed into place or removed meanwhile: not incomplete.
          Effect.catchIf(isAbsent, () => Effect.succeedNone),
          Effect.mapError(failed("incompleteUploads"))
        )
        if (Option.isNone(info)) continue
        const startedAt = Option.orElse(startOf(name), () => info.value.mtime)
        found.push({ key, id: name, startedAt: Option.getOrElse(startedAt, () => new Date(0)) })
      }
      return found
    })

    const abortUpload = Effect.fn("BlobStore.abortUpload")(function*(upload: IncompleteUpload) {
      if (upload.id.includes("/") || upload.id.startsWith(".")) {
        return yield* new BlobStoreError({ op: "abortUpload", cause: new Error(`not a temporary file: ${upload.id}`) })
      }
      yield* fs.remove(join(root, "tmp", upload.id)).pipe(
        Effect.catchIf(isAbsent, () => Effect.void),
        Effect.mapError(failed("abortUpload"))
      )
    })

    const probe = Effect.gen(function*() {
      const path = tmpPath()
      yield* fs.writeFileString(path, "probe")
      yield* fs.remove(path)
    })

    const health = Effect.timed(probe).pipe(
      Effect.map(([elapsed]) => ({
        status: "filesystem" as const,
        latency_ms: Math.round(Duration.toMillis(elapsed) * 10) / 10,
        error: null
      })),
      Effect.catchAll((error) => Effect.succeed({ status: "down" as const, latency_ms: null, error: describe(error) })),
      Effect.withSpan("BlobStore.health")
    )

    return {
      kind: "filesystem",
      // Effect.fn cannot keep the body's error type parameter; the body's errors do pass through as is.
      put: put as BlobStoreService["put"],
      get,
      read,
      head,
      delete: delete_,
      incompleteUploads,
      abortUpload,
      ...GatewayLinks.make(options, { head, get }),
      health
    } as const
  })
