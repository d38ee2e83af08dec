/**
 * The `BlobStore` layers as plain functions, for `import * as BlobStores` at composition roots.
 *
 * @since 1.0.0
 */
import { BlobStore } from "./BlobStore.js"

/** @since 1.0.0 */
export const layerFilesystem = BlobStore.layerFilesystem

/** @since 1.0.0 */
export const layerS3 = BlobStore.layerS3

/** @since 1.0.0 */
export const layerMemory = BlobStore.layerMemory

/** @since 1.0.0 */
export const layerConfig = BlobStore.layerConfig
