/**
 * The stores the gateway serves files from itself, files in a temporary directory and memory:
 * the common suite, then the links the gateway signs and answers, and health.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it, layer, type Vitest } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { join } from "node:path"
import { BlobLinkExpired, BlobStore, type IncompleteUpload } from "../src/BlobStore.js"
import { behavesAsBlobStore, BodyBroke, bytes, pacesCollections, writesAtomically } from "./support/BlobStoreSuite.js"

const BASE = "https://wa.example.kz"
const SECRET = Redacted.make("test-signing-secret-0123456789abcdef")

/**
 * The files route as the gateway should mount it: a wildcard, because the router refuses a
 * `:param` longer than 100 characters and tokens with a file name are longer.
 */
const FilesRoute = HttpRouter.empty.pipe(
  HttpRouter.get(
    "/files/*",
    Effect.flatMap(HttpRouter.params, (params) =>
      Effect.flatMap(BlobStore, (store) => store.serveSigned(params["*"] ?? "")))
  )
)
const serving = HttpServer.serve(FilesRoute).pipe(Layer.provideMerge(NodeHttpServer.layerTest))

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1)

/** Links answered by the gateway: the filesystem and memory stores. */
const gatewayLinks = (it: Vitest.MethodsNonLive<BlobStore | HttpClient.HttpClient>) => {
  it.effect("a signed link serves the file with its type, length and disposition", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/5/voice.ogg", bytes(3000, 9), { contentType: "audio/ogg" })
      const url = yield* store.signedUrl("media/5/voice.ogg", { expiresInSeconds: 900, disposition: "inline" })
      assert.match(url, /^https:\/\/wa\.example\.kz\/files\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)

      const response = yield* HttpClient.get(`/files/${tokenOf(url)}`)
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["content-type"], "audio/ogg")
      assert.strictEqual(response.headers["content-length"], "3000")
      assert.strictEqual(response.headers["content-disposition"], "inline")
      assert.strictEqual(response.headers["x-content-type-options"], "nosniff")
      assert.deepStrictEqual(new Uint8Array(yield* response.arrayBuffer), bytes(3000, 9))
    }))

  it.effect("an attachment link names the file, non-ASCII names per RFC 6266, and may override the type", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("exports/7/a.bin", bytes(10), { contentType: "application/octet-stream" })
      const url = yield* store.signedUrl("exports/7/a.bin", {
        expiresInSeconds: 60,
        disposition: "attachment",
        filename: "Отчёт за март.pdf",
        contentType: "application/pdf"
      })
      const response = yield* HttpClient.get(`/files/${tokenOf(url)}`)
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["content-type"], "application/pdf")
      assert.strictEqual(
        response.headers["content-disposition"],
        "attachment; filename=\"_____ __ ____.pdf\"; " +
          "filename*=UTF-8''%D0%9E%D1%82%D1%87%D1%91%D1%82%20%D0%B7%D0%B0%20%D0%BC%D0%B0%D1%80%D1%82.pdf"
      )
      assert.deepStrictEqual(new Uint8Array(yield* response.arrayBuffer), bytes(10))
    }))

  it.effect("a link works for its 900 seconds and not a second more", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/6/x.txt", bytes(5), { contentType: "text/plain" })
      const token = tokenOf(yield* store.signedUrl("media/6/x.txt", { expiresInSeconds: 900, disposition: "inline" }))
      yield* TestClock.adjust("14 minutes")
      yield* TestClock.adjust("59 seconds")
      const last = yield* store.serveSigned(token)
      assert.strictEqual(last.status, 200)
      assert.strictEqual(last.headers["cache-control"], "private, max-age=1")
      yield* TestClock.adjust("1 second")
      const expired = yield* Effect.flip(store.serveSigned(token))
      assert.deepStrictEqual(
        [expired._tag, expired instanceof BlobLinkExpired && expired.expiredAt],
        ["BlobLinkExpired", 900]
      )
      yield* TestClock.adjust("1 hour")
      assert.strictEqual((yield* Effect.flip(store.serveSigned(token)))._tag, "BlobLinkExpired")
    }))

  it.effect("a link signed between two seconds lives its full lifetime", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/6/y.txt", bytes(5), { contentType: "text/plain" })
      yield* TestClock.adjust("700 millis")
      const token = tokenOf(yield* store.signedUrl("media/6/y.txt", { expiresInSeconds: 60, disposition: "inline" }))
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual((yield* store.serveSigned(token)).status, 200)
      yield* TestClock.adjust("300 millis")
      assert.strictEqual((yield* Effect.flip(store.serveSigned(token)))._tag, "BlobLinkExpired")
    }))

  it.effect("tampered, foreign and garbled tokens are invalid; a deleted file is not found", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      yield* store.put("media/8/x.txt", bytes(5), { contentType: "text/plain" })
      yield* store.put("media/8/y.txt", bytes(5), { contentType: "text/plain" })
      const token = tokenOf(yield* store.signedUrl("media/8/x.txt", { expiresInSeconds: 900, disposition: "inline" }))
      const [payload, signature] = token.split(".")
      const other = tokenOf(yield* store.signedUrl("media/8/y.txt", { expiresInSeconds: 900, disposition: "inline" }))
      const foreign = yield* BlobStore.pipe(
        Effect.flatMap((s) => s.signedUrl("media/8/x.txt", { expiresInSeconds: 900, disposition: "inline" })),
        Effect.provide(BlobStore.layerMemory({ publicBaseUrl: BASE, signingSecret: Redacted.make("another-secret") }))
      )
      const flipped = (s: string) => s.slice(0, 10) + (s[10] === "A" ? "B" : "A") + s.slice(11)
      const forged = [
        `${flipped(payload)}.${signature}`,
        `${payload}.${flipped(signature)}`,
        `${other.split(".")[0]}.${signature}`,
        `${payload}.${signature}=`,
        tokenOf(foreign),
        "",
        "nonsense",
        `${payload}.${signature}.${signature}`
      ]
      for (const candidate of forged) {
        const error = yield* Effect.flip(store.serveSigned(candidate))
        assert.deepStrictEqual([candidate, error._tag], [candidate, "BlobLinkInvalid"])
      }
      yield* store.delete("media/8/x.txt")
      const gone = yield* Effect.flip(store.serveSigned(token))
      assert.strictEqual(gone._tag, "BlobNotFound")
    }))
}

class StoreDir extends Context.Tag("test/StoreDir")<StoreDir, string>() {}

const filesystem = Layer.unwrapScoped(Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  // The store sits one level inside a fresh directory, so the test's look at the store's parent
  // sees only what the store might have written, not whatever else lies in the system's tmp.
  const dir = join(yield* fs.makeTempDirectoryScoped({ prefix: "wagate-blobs-" }), "store")
  yield* fs.makeDirectory(dir)
  return Layer.merge(
    BlobStore.layerFilesystem({ dir, publicBaseUrl: BASE, signingSecret: SECRET }),
    Layer.succeed(StoreDir, dir)
  )
})).pipe(Layer.provide(NodeFileSystem.layer))

const filesystemServed = serving.pipe(Layer.provideMerge(filesystem), Layer.provideMerge(NodeFileSystem.layer))

layer(filesystemServed)("filesystem store", (it) => {
  behavesAsBlobStore(it)
  writesAtomically(it)
  pacesCollections(it)
  gatewayLinks(it)

  it.effect("keeps blobs as plain files, and nothing of failed writes", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const fs = yield* FileSystem.FileSystem
      const dir = yield* StoreDir
      assert.strictEqual(store.kind, "filesystem")
      yield* store.put("media/9/plain.txt", new TextEncoder().encode("hello"), { contentType: "text/plain" })
      assert.strictEqual(yield* fs.readFileString(join(dir, "objects", "media/9/plain.txt")), "hello")
      yield* Effect.flip(store.put("media/9/broken", Stream.fail(new BodyBroke()), { contentType: "text/plain" }))
      assert.deepStrictEqual(yield* fs.readDirectory(join(dir, "tmp")), [])
    }))

  it.effect("a write in progress is listed as incomplete with its key; aborting it removes its temporary file", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const fs = yield* FileSystem.FileSystem
      const dir = yield* StoreDir
      // A write that never ends, as a process killed in its middle leaves it.
      const writing = yield* Effect.fork(
        store.put("exports/5/7.zip", Stream.concat(Stream.make(bytes(1000)), Stream.never), { contentType: "application/zip" })
      )
      let listed: ReadonlyArray<IncompleteUpload> = []
      for (let i = 0; i < 200 && listed.length === 0; i++) {
        listed = yield* store.incompleteUploads("exports/")
        if (listed.length === 0) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      }
      assert.deepStrictEqual(listed.map((u) => u.key), ["exports/5/7.zip"])
      assert.isBelow(Math.abs(listed[0]!.startedAt.getTime() - Date.now()), 60_000)
      // Later writes (here: the file touched an hour on) do not move when the upload began, so a
      // run started over after a kill still sees the killed run's file as older than itself.
      const path = join(dir, "tmp", listed[0]!.id)
      const later = new Date(Date.now() + 3_600_000)
      yield* fs.utimes(path, later, later)
      assert.deepStrictEqual((yield* store.incompleteUploads("exports/")).map((u) => u.startedAt), [listed[0]!.startedAt])
      assert.deepStrictEqual(yield* store.incompleteUploads("media/"), [])
      yield* store.abortUpload(listed[0]!)
      assert.deepStrictEqual(yield* fs.readDirectory(join(dir, "tmp")), [])
      assert.deepStrictEqual(yield* store.incompleteUploads(""), [])
      // Removing one already gone is fine.
      yield* store.abortUpload(listed[0]!)
      yield* Fiber.interrupt(writing)
    }))

  it.effect("deleting a blob removes the directories it leaves empty, and only those", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const fs = yield* FileSystem.FileSystem
      const dir = yield* StoreDir
      yield* store.put("prune/1/2/a", bytes(1), { contentType: "text/plain" })
      yield* store.put("prune/1/b", bytes(2), { contentType: "text/plain" })
      yield* store.delete("prune/1/2/a")
      for (const side of ["objects", "meta"]) {
        assert.deepStrictEqual([side, yield* fs.readDirectory(join(dir, side, "prune/1"))], [side, ["b"]])
      }
      yield* store.delete("prune/1/b")
      for (const side of ["objects", "meta"]) {
        assert.deepStrictEqual([side, yield* fs.exists(join(dir, side, "prune"))], [side, false])
        assert.deepStrictEqual([side, yield* fs.exists(join(dir, side))], [side, true])
      }
    }))

  it.effect("a key that tries to leave the directory writes nothing anywhere", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      const fs = yield* FileSystem.FileSystem
      const dir = yield* StoreDir
      for (const key of ["../x", "../../x", "objects/../../x", "/x", "a//x"]) {
        const error = yield* Effect.flip(store.put(key, bytes(1), { contentType: "text/plain" }))
        assert.deepStrictEqual([key, error._tag], [key, "BlobStoreError"])
      }
      const outside = [join(dir, "x"), join(dir, "..", "x"), join(dir, "objects", "x"), join(dir, "objects", "a", "x")]
      for (const path of outside) {
        assert.deepStrictEqual([path, yield* fs.exists(path)], [path, false])
      }
    }))

  it.effect("health: the directory is writable", () =>
    Effect.gen(function*() {
      const health = yield* Effect.flatMap(BlobStore, (store) => store.health)
      assert.deepStrictEqual([health.status, typeof health.latency_ms, health.error], ["filesystem", "number", null])
    }))
})

layer(serving.pipe(Layer.provideMerge(BlobStore.layerMemory({ publicBaseUrl: BASE, signingSecret: SECRET }))))(
  "memory store",
  (it) => {
    behavesAsBlobStore(it)
    writesAtomically(it)
    gatewayLinks(it)

    it.effect("health says memory", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        assert.strictEqual(store.kind, "memory")
        assert.deepStrictEqual(yield* store.health, { status: "memory", latency_ms: null, error: null })
      }))
  }
)

describe("filesystem store health", () => {
  it.scoped("a filesystem store whose directory vanished is down", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = join(yield* fs.makeTempDirectoryScoped({ prefix: "wagate-blobs-" }), "blobs")
      const store = yield* Effect.provide(
        BlobStore,
        BlobStore.layerFilesystem({ dir, publicBaseUrl: BASE, signingSecret: SECRET })
      )
      assert.strictEqual((yield* store.health).status, "filesystem")
      yield* fs.remove(dir, { recursive: true })
      const health = yield* store.health
      assert.deepStrictEqual([health.status, health.latency_ms], ["down", null])
      assert.include(health.error, "ENOENT")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
