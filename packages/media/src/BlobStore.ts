/**
 * Where message media and ZIP archives live: the local filesystem under the data directory by
 * default, any S3-compatible store in production, memory in tests of other packages.
 *
 * @since 1.0.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as BlobStoreConfig from "./BlobStoreConfig.js"
import type { BlobStoreService } from "./BlobPort.js"
import type { BlobStoreError } from "./BlobStoreError.js"
import * as FilesystemBlobStore from "./FilesystemBlobStore.js"
import * as MemoryBlobStore from "./MemoryBlobStore.js"
import type * as S3BlobStore from "./S3BlobStore.js"

export { BlobLinkExpired, BlobLinkInvalid, BlobNotFound, BlobStoreError } from "./BlobStoreError.js"

export type {
  BlobBody,
  BlobHead,
  BlobStoreService,
  ByteRange,
  IncompleteUpload,
  PutOptions,
  SignedUrlOptions
} from "./BlobPort.js"

/**
 * The blob store port. Keys are `/`-separated paths (see `BlobKey`). Every method is a span named
 * `BlobStore.<method>`.
 *
 * @since 1.0.0
 * @category context
 */
export class BlobStore extends Context.Tag("@wagate/media/BlobStore")<BlobStore, BlobStoreService>() {
  /**
   * Blobs as files under `dir`; links signed by the gateway.
   *
   * @since 1.0.0
   */
  static readonly layerFilesystem = (options: FilesystemBlobStore.Options): Layer.Layer<BlobStore, BlobStoreError> =>
    Layer.effect(BlobStore, FilesystemBlobStore.make(options)).pipe(Layer.provide(NodeFileSystem.layer))

  /**
   * Blobs in an S3-compatible bucket; links presigned. The S3 SDK is loaded when this layer is
   * built, so processes on the filesystem store never pay for it.
   *
   * @since 1.0.0
   */
  static readonly layerS3 = (options: S3BlobStore.Options): Layer.Layer<BlobStore> =>
    Layer.scoped(
      BlobStore,
      Effect.flatMap(Effect.promise(() => import("./S3BlobStore.js")), (S3BlobStore) => S3BlobStore.make(options))
    )

  /**
   * Blobs in this process's memory, for tests of other packages.
   *
   * @since 1.0.0
   */
  static readonly layerMemory = (options: MemoryBlobStore.Options): Layer.Layer<BlobStore> =>
    Layer.effect(BlobStore, MemoryBlobStore.make(options))

  /**
   * S3 when `S3_BUCKET` is set, otherwise the filesystem under `<dataDir>/blobs` (see
   * `BlobStoreConfig` for every setting).
   *
   * @since 1.0.0
   */
  static readonly layerConfig = (
    defaults: BlobStoreConfig.Defaults
  ): Layer.Layer<BlobStore, ConfigError.ConfigError | BlobStoreError> =>
    Layer.scoped(BlobStore, BlobStoreConfig.make(defaults)).pipe(Layer.provide(NodeFileSystem.layer))
}
