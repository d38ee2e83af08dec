/**
 * Where message media and archives are stored, and the signed links that hand them out.
 *
 * @since 1.0.0
 */
export * as BlobKey from "./BlobKey.js"
export * as BlobStore from "./BlobStore.js"
export * as BlobStoreConfig from "./BlobStoreConfig.js"
export * as BlobStoreError from "./BlobStoreError.js"
export * as ByteRanges from "./ByteRanges.js"
export * as ContentDisposition from "./ContentDisposition.js"
export * as FilesystemBlobStore from "./FilesystemBlobStore.js"
export * as LinkLifetime from "./LinkLifetime.js"
export * as MemoryBlobStore from "./MemoryBlobStore.js"
export * as SignedLink from "./SignedLink.js"
export * as StoragePolicy from "./StoragePolicy.js"
export * as StorageReport from "./StorageReport.js"
export * as MediaFetcher from "./MediaFetcher.js"
export * as MediaLinks from "./MediaLinks.js"
export * as PrivateAddress from "./PrivateAddress.js"
