/**
 * The two blob stores a gateway runs on, for tests that must pass on both: the filesystem under
 * a temporary directory (links signed and served by the gateway) and S3 on a real s3rver
 * started for the test (presigned links). Each can be taken down to test failures.
 */
import { BlobStore } from "@wagate/media/BlobStore"
import type * as S3BlobStore from "@wagate/media/S3BlobStore"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import S3rverServer from "s3rver"
import * as S3rver from "../../packages/media/test/support/S3rver.js"

export const SIGNING_SECRET = Redacted.make("media-test-signing-secret-0123456789")
const BUCKET = "wagate-media-test"

export interface MediaStore {
  readonly kind: "filesystem" | "s3"
  readonly layer: (publicBaseUrl: string) => Layer.Layer<BlobStore, unknown>
  /** Makes the store unreachable (S3 server stopped, filesystem directory removed). */
  readonly takeDown: Effect.Effect<void>
}

export const filesystem: Effect.Effect<MediaStore & {
  /** The keys the store holds under `prefix` (`media/<account>/`), sorted. */
  readonly keys: (prefix: string) => Effect.Effect<ReadonlyArray<string>>
}> = Effect.sync(() => {
  const dir = mkdtempSync(join(tmpdir(), "wagate-media-"))
  const objects = join(dir, "objects")
  return {
    kind: "filesystem",
    layer: (publicBaseUrl) => BlobStore.layerFilesystem({ dir, publicBaseUrl, signingSecret: SIGNING_SECRET }),
    takeDown: Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
    keys: (prefix) =>
      Effect.sync(() =>
        existsSync(join(objects, prefix))
          ? readdirSync(join(objects, prefix), { recursive: true, withFileTypes: true })
            .filter((entry) => entry.isFile())
            .map((entry) => relative(objects, join(entry.parentPath, entry.name)))
            .sort()
          : []
      )
  }
})

/** The S3 store's options for the test server at `endpoint` (its keys, this module's bucket). */
export const s3Options = (endpoint: string): S3BlobStore.Options => ({ ...S3rver.options(endpoint), bucket: BUCKET })

export const s3: Effect.Effect<MediaStore & { readonly endpoint: string }, never, Scope.Scope> = Effect.gen(function*() {
  const directory = mkdtempSync(join(tmpdir(), "wagate-s3rver-"))
  const server = new S3rverServer({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: BUCKET }] })
  const serverScope = yield* Scope.make()
  const address = yield* Effect.acquireRelease(
    Effect.promise(() => server.run()),
    () =>
      Effect.promise(() => {
        server.httpServer.closeAllConnections()
        return server.close()
      })
  ).pipe(Scope.extend(serverScope))
  yield* Effect.addFinalizer(() => Scope.close(serverScope, Exit.void))
  const endpoint = `http://127.0.0.1:${address.port}`
  return {
    kind: "s3",
    endpoint,
    layer: () => BlobStore.layerS3(s3Options(endpoint)),
    takeDown: Scope.close(serverScope, Exit.void)
  }
})
