/**
 * Which store the configuration yields, and that links of the default store survive a restart.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { join } from "node:path"
import { BlobStore } from "../src/BlobStore.js"
import * as SignedLink from "../src/SignedLink.js"

const BASE = "http://127.0.0.1:3000"

/** Runs `use` against the store `env` configures, built fresh as at a process start. */
const withStore = <A, E>(
  dataDir: string,
  env: Record<string, string>,
  use: (store: BlobStore["Type"]) => Effect.Effect<A, E>
) =>
  Effect.flatMap(BlobStore, use).pipe(
    Effect.provide(BlobStore.layerConfig({ dataDir, publicBaseUrl: BASE })),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  )

const tempDir = Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "wagate-data-" }))

describe("BlobStore.layerConfig", () => {
  it.scoped("without S3_BUCKET: files under <dataDir>/blobs, links signed by a kept secret that survive restarts", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dataDir = yield* tempDir
      const url = yield* withStore(dataDir, { S3_BUCKET: "" }, (store) =>
        Effect.gen(function*() {
          assert.strictEqual(store.kind, "filesystem")
          yield* store.put("media/1/a.txt", new TextEncoder().encode("hi"), { contentType: "text/plain" })
          return yield* store.signedUrl("media/1/a.txt", { expiresInSeconds: 60, disposition: "inline" })
        }))
      assert.strictEqual(yield* fs.readFileString(join(dataDir, "blobs", "objects", "media/1/a.txt")), "hi")
      const secretFile = join(dataDir, "blob-signing-secret")
      assert.strictEqual((yield* fs.stat(secretFile)).mode & 0o777, 0o600)
      assert.match(yield* fs.readFileString(secretFile), /^[A-Za-z0-9_-]{43}\n$/)

      const restarted = yield* withStore(dataDir, {}, (store) => store.serveSigned(url.slice(url.lastIndexOf("/") + 1)))
      assert.strictEqual(restarted.status, 200)
      assert.strictEqual(restarted.headers["content-length"], "2")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("BLOB_SIGNING_SECRET signs the links and nothing is written beside the blobs", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dataDir = yield* tempDir
      const secret = "a-configured-secret-of-at-least-32-chars"
      const url = yield* withStore(dataDir, { BLOB_SIGNING_SECRET: secret }, (store) =>
        store.signedUrl("media/1/a.txt", { expiresInSeconds: 60, disposition: "attachment", filename: "a.txt" }))
      const claims = SignedLink.verify(Redacted.make(secret), url.slice(url.lastIndexOf("/") + 1), 0)
      assert.deepStrictEqual(
        claims,
        Either.right({ key: "media/1/a.txt", expiresAt: 60, disposition: "attachment" as const, filename: "a.txt" })
      )
      assert.isFalse(yield* fs.exists(join(dataDir, "blob-signing-secret")))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a short BLOB_SIGNING_SECRET is refused at start, the refusal naming the variable and not the secret", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const error = yield* Effect.flip(withStore(dataDir, { BLOB_SIGNING_SECRET: "short" }, (store) => Effect.succeed(store)))
      assert.include(String(error), `Invalid data at BLOB_SIGNING_SECRET: "BLOB_SIGNING_SECRET must be at least 32 characters"`)
      assert.notInclude(String(error), "short\"")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("S3_BUCKET selects S3 with the S3_* settings", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const env = {
        S3_BUCKET: "media",
        S3_ENDPOINT: "http://minio.internal:9000",
        S3_REGION: "eu-central-1",
        S3_ACCESS_KEY_ID: "AKIDEXAMPLE",
        S3_SECRET_ACCESS_KEY: "secret",
        S3_PUBLIC_ENDPOINT: "https://files.example.kz"
      }
      const [kind, url] = yield* withStore(dataDir, env, (store) =>
        Effect.map(
          store.signedUrl("media/1/a.jpg", { expiresInSeconds: 300, disposition: "inline" }),
          (url) => [store.kind, new URL(url)] as const
        ))
      assert.strictEqual(kind, "s3")
      assert.strictEqual(`${url.origin}${url.pathname}`, "https://files.example.kz/media/media/1/a.jpg")
      assert.match(url.searchParams.get("X-Amz-Credential") ?? "", /^AKIDEXAMPLE\/\d{8}\/eu-central-1\/s3\/aws4_request$/)
      assert.strictEqual(url.searchParams.get("X-Amz-Expires"), "300")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("S3_BUCKET without credentials is refused at start, naming the missing setting", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const error = yield* Effect.flip(withStore(dataDir, { S3_BUCKET: "media" }, (store) => Effect.succeed(store)))
      assert.include(String(error), "S3_ACCESS_KEY_ID")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
