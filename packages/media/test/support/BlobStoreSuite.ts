/**
 * What every blob store does, as one suite run against each of them, and the helpers the store
 * tests share.
 */
import { assert, type Vitest } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { Readable } from "node:stream"
import { BlobStore } from "../../src/BlobStore.js"
import * as NodeBody from "../../src/NodeBody.js"
import * as TransferMemory from "../../src/TransferMemory.js"

export const MB = 1024 * 1024

export class BodyBroke extends Data.TaggedError("BodyBroke")<{}> {}

/** Deterministic bytes; `seed` makes blobs of the same length differ. */
export const bytes = (length: number, seed = 0) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed * 7) % 256)

/** A Node stream of `parts` that, given `error`, fails with it after them; its failure is `BodyBroke`. */
export const nodeBody = (parts: ReadonlyArray<Buffer>, error?: Error) =>
  NodeBody.make(
    Readable.from((function*() {
      yield* parts
      if (error !== undefined) throw error
    })()),
    () => new BodyBroke()
  )

export const read = (key: string) =>
  BlobStore.pipe(
    Effect.flatMap((store) => Stream.runCollect(store.get(key))),
    Effect.map((chunks) => new Uint8Array(Buffer.concat(Chunk.toReadonlyArray(chunks))))
  )

export const sha256 = (parts: Iterable<Uint8Array>) => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part)
  return hash.digest("hex")
}

/** Waits, in real time (S3 answers on its own clock), until `condition` holds; at most 5 s. */
export const eventually = (condition: () => boolean) =>
  Effect.promise(() =>
    new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 5_000
      const check = () =>
        condition()
          ? resolve()
          : Date.now() > deadline
          ? reject(new Error("condition not met within 5 s"))
          : setTimeout(check, 10)
      check()
    })
  )

export const behavesAsBlobStore = (it: Vitest.MethodsNonLive<BlobStore>) => {
  it.effect("stores bytes, answers head and get, and deletes", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const body = bytes(1024)
      const put = yield* store.put("media/1/photo.jpg", body, { contentType: "image/jpeg", contentLength: 1024 })
      assert.deepStrictEqual(put, { size: 1024 })
      assert.deepStrictEqual(yield* store.head("media/1/photo.jpg"), Option.some({ size: 1024, contentType: "image/jpeg" }))
      assert.deepStrictEqual(yield* read("media/1/photo.jpg"), body)

      yield* store.delete("media/1/photo.jpg")
      assert.deepStrictEqual(yield* store.head("media/1/photo.jpg"), Option.none())
      const gone = yield* Effect.flip(read("media/1/photo.jpg"))
      assert.deepStrictEqual(gone._tag === "BlobNotFound" && gone.key, "media/1/photo.jpg")
      // Deleting again, or what never existed, is not an error.
      yield* store.delete("media/1/photo.jpg")
      yield* store.delete("media/1/never.jpg")
    }))

  it.effect("a stream body arrives whole and in order", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const parts = [bytes(1, 1), bytes(70_000, 2), bytes(0), bytes(333, 3)]
      const put = yield* store.put("media/1/voice.ogg", Stream.fromIterable(parts), { contentType: "audio/ogg" })
      assert.deepStrictEqual(put, { size: 70_334 })
      assert.deepStrictEqual(yield* read("media/1/voice.ogg"), new Uint8Array(Buffer.concat(parts)))
      assert.deepStrictEqual(yield* store.head("media/1/voice.ogg"), Option.some({ size: 70_334, contentType: "audio/ogg" }))
    }))

  it.effect("put replaces the bytes and the type", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/1/doc", bytes(500, 1), { contentType: "text/plain" })
      yield* store.put("media/1/doc", bytes(20, 2), { contentType: "application/pdf" })
      assert.deepStrictEqual(yield* store.head("media/1/doc"), Option.some({ size: 20, contentType: "application/pdf" }))
      assert.deepStrictEqual(yield* read("media/1/doc"), bytes(20, 2))
    }))

  it.effect("an empty blob is a blob", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      assert.deepStrictEqual(yield* store.put("media/1/empty", new Uint8Array(), { contentType: "text/plain" }), { size: 0 })
      assert.deepStrictEqual(yield* store.head("media/1/empty"), Option.some({ size: 0, contentType: "text/plain" }))
      assert.deepStrictEqual(yield* read("media/1/empty"), new Uint8Array())
    }))

  it.effect("a body that fails stores nothing, keeps the old blob and fails with the body's error", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/3/a.bin", bytes(10, 1), { contentType: "application/octet-stream" })
      const broken = Stream.concat(Stream.make(bytes(100_000, 2)), Stream.fail(new BodyBroke()))
      const error = yield* Effect.flip(store.put("media/3/a.bin", broken, { contentType: "text/plain" }))
      assert.strictEqual(error._tag, "BodyBroke")
      assert.deepStrictEqual(yield* read("media/3/a.bin"), bytes(10, 1))
      assert.deepStrictEqual(
        yield* store.head("media/3/a.bin"),
        Option.some({ size: 10, contentType: "application/octet-stream" })
      )

      const fresh = yield* Effect.flip(store.put("media/3/b.bin", broken, { contentType: "text/plain" }))
      assert.strictEqual(fresh._tag, "BodyBroke")
      assert.deepStrictEqual(yield* store.head("media/3/b.bin"), Option.none())
    }))

  it.effect("a body longer or shorter than its contentLength stores nothing", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const long = yield* Effect.flip(store.put("media/4/long", bytes(12), { contentType: "text/plain", contentLength: 10 }))
      const short = yield* Effect.flip(
        store.put("media/4/short", Stream.make(bytes(4), bytes(4)), { contentType: "text/plain", contentLength: 10 })
      )
      assert.deepStrictEqual([long._tag, short._tag], ["BlobStoreError", "BlobStoreError"])
      assert.include(String(long.cause), "expected 10")
      assert.include(String(short.cause), "body is 8 bytes, expected 10")
      assert.deepStrictEqual(yield* store.head("media/4/long"), Option.none())
      assert.deepStrictEqual(yield* store.head("media/4/short"), Option.none())
    }))

  it.effect("a Node stream body arrives whole and in order, its length checked as it passes", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const parts = [bytes(1, 1), bytes(70_000, 2), bytes(333, 3)].map((part) => Buffer.from(part))
      const put = yield* store.put("media/5/doc.pdf", nodeBody(parts), { contentType: "application/pdf", contentLength: 70_334 })
      assert.deepStrictEqual(put, { size: 70_334 })
      assert.deepStrictEqual(yield* read("media/5/doc.pdf"), new Uint8Array(Buffer.concat(parts)))
      assert.deepStrictEqual(yield* store.head("media/5/doc.pdf"), Option.some({ size: 70_334, contentType: "application/pdf" }))

      const long = yield* Effect.flip(store.put("media/5/long", nodeBody([Buffer.from(bytes(12))]), { contentType: "text/plain", contentLength: 10 }))
      const short = yield* Effect.flip(
        store.put("media/5/short", nodeBody([Buffer.from(bytes(4)), Buffer.from(bytes(4))]), { contentType: "text/plain", contentLength: 10 })
      )
      assert.deepStrictEqual([long._tag, short._tag], ["BlobStoreError", "BlobStoreError"])
      assert.include(String(long._tag === "BlobStoreError" && long.cause), "expected 10")
      assert.include(String(short._tag === "BlobStoreError" && short.cause), "body is 8 bytes, expected 10")
      assert.deepStrictEqual(yield* store.head("media/5/long"), Option.none())
      assert.deepStrictEqual(yield* store.head("media/5/short"), Option.none())
    }))

  it.effect("a Node body that fails stores nothing, keeps the old blob and fails with the body's error", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/6/a.bin", bytes(10, 1), { contentType: "application/octet-stream" })
      const broken = () => nodeBody([Buffer.from(bytes(100_000, 2))], new Error("connection reset"))
      const error = yield* Effect.flip(store.put("media/6/a.bin", broken(), { contentType: "text/plain" }))
      assert.strictEqual(error._tag, "BodyBroke")
      assert.deepStrictEqual(yield* read("media/6/a.bin"), bytes(10, 1))
      // With its length announced (one streamed PutObject on S3: s3rver, unlike S3, writes such an
      // object in place as it arrives, so what is left of the key is not checked here).
      const announced = yield* Effect.flip(store.put("media/6/c.bin", broken(), { contentType: "text/plain", contentLength: 200_000 }))
      assert.strictEqual(announced._tag, "BodyBroke")
      // A body that failed before the store read any of it.
      const failedAlready = nodeBody([], new Error("connection refused"))
      yield* Effect.promise(() => new Promise((resolve) => failedAlready.readable.once("error", resolve).resume()))
      const early = yield* Effect.flip(store.put("media/6/b.bin", failedAlready, { contentType: "text/plain", contentLength: 5 }))
      assert.strictEqual(early._tag, "BodyBroke")
      assert.deepStrictEqual(yield* store.head("media/6/b.bin"), Option.none())
    }))

  it.scoped("read opens a blob as a Node stream: its bytes or a range; a missing blob or a prefix is BlobNotFound at once", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const file = bytes(100_000, 5)
      yield* store.put("media/7/doc/a.bin", file, { contentType: "application/octet-stream" })
      const readAll = (body: NodeBody.NodeBody<unknown>) =>
        Effect.promise(async () => {
          const chunks: Array<Buffer> = []
          for await (const chunk of body.readable) chunks.push(Buffer.from(chunk as Uint8Array))
          return new Uint8Array(Buffer.concat(chunks))
        })
      assert.deepStrictEqual(yield* readAll(yield* store.read("media/7/doc/a.bin")), file)
      assert.deepStrictEqual(
        yield* readAll(yield* store.read("media/7/doc/a.bin", { start: 10, end: 70_009 })),
        file.slice(10, 70_010)
      )
      const missing = yield* Effect.flip(store.read("media/7/doc/b.bin"))
      const prefix = yield* Effect.flip(store.read("media/7/doc"))
      assert.deepStrictEqual([missing._tag, prefix._tag], ["BlobNotFound", "BlobNotFound"])
    }))

  it.effect("keys are names, not patterns: spaces, plus, percent, question mark, hash, Unicode", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const key = "media/1/Фото 1+2 %20 (a)&b=c?x#y'.jpg"
      yield* store.put(key, bytes(300, 7), { contentType: "image/jpeg" })
      assert.deepStrictEqual(yield* store.head(key), Option.some({ size: 300, contentType: "image/jpeg" }))
      assert.deepStrictEqual(yield* read(key), bytes(300, 7))
      // A near miss is another key.
      assert.deepStrictEqual(yield* store.head("media/1/Фото 1 2 %20 (a)&b=c?x#y'.jpg"), Option.none())
      yield* store.delete(key)
      assert.deepStrictEqual(yield* store.head(key), Option.none())
    }))

  it.effect("a name is a blob or a prefix of blobs, and may change from one to the other", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("tree/a/b", bytes(3, 1), { contentType: "text/plain" })
      // Only a prefix: holds nothing, whatever is asked.
      assert.deepStrictEqual(yield* store.head("tree/a"), Option.none())
      assert.strictEqual((yield* Effect.flip(read("tree/a")))._tag, "BlobNotFound")
      yield* store.delete("tree/a")
      // Below a blob: nothing either.
      assert.deepStrictEqual(yield* store.head("tree/a/b/c"), Option.none())
      assert.strictEqual((yield* Effect.flip(read("tree/a/b/c")))._tag, "BlobNotFound")
      yield* store.delete("tree/a/b/c")
      assert.deepStrictEqual(yield* read("tree/a/b"), bytes(3, 1))

      // Once the blobs below it are gone, the prefix can be a blob, and the other way round.
      yield* store.delete("tree/a/b")
      yield* store.put("tree/a", bytes(4, 2), { contentType: "text/plain" })
      assert.deepStrictEqual(yield* read("tree/a"), bytes(4, 2))
      yield* store.delete("tree/a")
      yield* store.put("tree/a/b/c", bytes(5, 3), { contentType: "text/plain" })
      assert.deepStrictEqual(yield* read("tree/a/b/c"), bytes(5, 3))
      yield* store.delete("tree/a/b/c")
      yield* store.put("tree/a/b", bytes(6, 4), { contentType: "text/plain" })
      assert.deepStrictEqual(yield* read("tree/a/b"), bytes(6, 4))
    }))

  it.effect("the stored blob does not change when the caller reuses its buffer", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const buffer = bytes(64, 1)
      yield* store.put("media/1/reused", buffer, { contentType: "text/plain" })
      buffer.fill(0)
      assert.deepStrictEqual(yield* read("media/1/reused"), bytes(64, 1))
    }))

  it.effect("a body that fails before its first byte stores nothing", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const body = Stream.fail(new BodyBroke())
      const error = yield* Effect.flip(store.put("media/3/never", body, { contentType: "text/plain" }))
      assert.strictEqual(error._tag, "BodyBroke")
      assert.deepStrictEqual(yield* store.head("media/3/never"), Option.none())
    }))

  it.effect("link lifetimes S3 would refuse are refused by every store", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/1/linked", bytes(8), { contentType: "text/plain" })
      for (const expiresInSeconds of [0, -1, 1.5, Number.NaN, 7 * 24 * 3600 + 1]) {
        const error = yield* Effect.flip(store.signedUrl("media/1/linked", { expiresInSeconds, disposition: "inline" }))
        assert.deepStrictEqual(
          [expiresInSeconds, error._tag, error.op],
          [expiresInSeconds, "BlobStoreError", "signedUrl"]
        )
      }
      for (const expiresInSeconds of [1, 7 * 24 * 3600]) {
        const url = yield* store.signedUrl("media/1/linked", { expiresInSeconds, disposition: "inline" })
        assert.isTrue(url.length > 0)
      }
    }))

  it.effect("keys that could leave the store are refused", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      for (const key of ["../escape", "media/../../escape", "/etc/passwd", "media//x", "media/x/", "", "a\\b", "a\nb"]) {
        const error = yield* Effect.flip(store.put(key, bytes(1), { contentType: "text/plain" }))
        assert.deepStrictEqual([key, error._tag, error.op], [key, "BlobStoreError", "put"])
      }
      const error = yield* Effect.flip(Stream.runDrain(store.get("../escape")))
      assert.strictEqual(error._tag, "BlobStoreError")
    }))
}

/**
 * Puts racing on one key. Not in the common suite because s3rver writes objects in place (S3
 * itself replaces an object atomically).
 */
export const writesAtomically = (it: Vitest.MethodsNonLive<BlobStore>) => {
  it.effect("concurrent writes to one key leave one of them whole, bytes and type together", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const writes = Array.from({ length: 16 }, (_, i) => ({
        body: bytes(100 + i, i),
        contentType: `application/x-writer-${i}`
      }))
      for (let round = 0; round < 10; round++) {
        yield* Effect.forEach(writes, (w) => store.put("race/one", w.body, { contentType: w.contentType }), {
          concurrency: "unbounded",
          discard: true
        })
        const head = yield* store.head("race/one")
        assert.isTrue(Option.isSome(head))
        const i = writes.findIndex((w) => Option.isSome(head) && w.contentType === head.value.contentType)
        assert.isAtLeast(i, 0)
        assert.deepStrictEqual(head, Option.some({ size: 100 + i, contentType: `application/x-writer-${i}` }))
        assert.deepStrictEqual(yield* read("race/one"), writes[i].body)
      }
    }))
}

/**
 * The young collections the stores ask for while files move (`TransferMemory`). Node defines
 * `gc` only with `--expose-gc`; here a recorder stands in for it. The count of bytes is the
 * process's, so what earlier tests moved may add one collection.
 */
export const pacesCollections = (it: Vitest.MethodsNonLive<BlobStore>) => {
  it.effect("for every COLLECT_EVERY bytes of files put or read, a young collection is asked of V8", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const asked: Array<unknown> = []
      const collections = Effect.sync(() => asked.splice(0))
      const recording = Effect.acquireRelease(
        Effect.sync(() => {
          const before = globalThis.gc
          globalThis.gc = ((options?: unknown) => void asked.push(options)) as NodeJS.GCFunction
          return before
        }),
        (before) => Effect.sync(() => void (globalThis.gc = before))
      )
      yield* Effect.scoped(Effect.gen(function*() {
        yield* recording
        const file = Buffer.from(bytes(10 * MB, 4))
        const parts = Array.from({ length: 160 }, (_, i) => file.subarray(i * 65_536, (i + 1) * 65_536))
        const expected = Math.floor((10 * MB) / TransferMemory.COLLECT_EVERY)
        assert.isAtLeast(expected, 2)
        // 10 MiB in: that many collections (one more with what came before), each a young one.
        yield* store.put("media/9/big.bin", nodeBody(parts), { contentType: "application/octet-stream", contentLength: 10 * MB })
        const afterPut = yield* collections
        assert.include([expected, expected + 1], afterPut.length)
        assert.deepStrictEqual(afterPut[0], { type: "minor" })
        // And 10 MiB out.
        assert.strictEqual((yield* read("media/9/big.bin")).byteLength, 10 * MB)
        assert.include([expected, expected + 1], (yield* collections).length)
        // A small file asks for none.
        yield* store.put("media/9/small.bin", bytes(1000), { contentType: "application/octet-stream" })
        assert.include([0, 1], (yield* collections).length)
      }))
    }))
}
