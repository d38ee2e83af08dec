/**
 * Choosing the blob store from configuration: S3 when `S3_BUCKET` is set, otherwise files under
 * `<dataDir>/blobs` with links signed by `BLOB_SIGNING_SECRET`, or by a secret generated once and
 * kept in `<dataDir>/blob-signing-secret` so links survive restarts.
 *
 * @since 1.0.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import type { BlobStoreService } from "./BlobPort.js"
import { BlobStoreError } from "./BlobStoreError.js"
import * as FilesystemBlobStore from "./FilesystemBlobStore.js"

/** @since 1.0.0 */
export interface Defaults {
  readonly dataDir: string
  /** Where clients reach the gateway; links of the filesystem store point there. */
  readonly publicBaseUrl: string
}

const optional = (name: string, description: string) =>
  Config.string(name).pipe(Config.withDescription(description), Config.option, Config.map(Option.getOrUndefined))

const bucket = Config.string("S3_BUCKET").pipe(
  Config.withDescription("S3 bucket for media and archives; unset or empty: the filesystem under DATA_DIR"),
  Config.option,
  // An empty value is how compose files and Helm charts usually say "unset".
  Config.map(Option.filter((name) => name !== ""))
)

/**
 * The S3 settings besides the bucket, read only when `S3_BUCKET` is set.
 *
 * @since 1.0.0
 */
export const s3 = Config.all({
  endpoint: optional("S3_ENDPOINT", "S3-compatible endpoint URL; unset for AWS"),
  region: Config.string("S3_REGION").pipe(Config.withDefault("us-east-1"), Config.withDescription("S3 region")),
  accessKeyId: Config.redacted("S3_ACCESS_KEY_ID").pipe(Config.withDescription("S3 access key id")),
  secretAccessKey: Config.redacted("S3_SECRET_ACCESS_KEY").pipe(Config.withDescription("S3 secret access key")),
  forcePathStyle: Config.boolean("S3_FORCE_PATH_STYLE").pipe(
    Config.withDefault(true),
    Config.withDescription("Bucket in the path rather than the host name (MinIO and most S3-compatible stores)")
  ),
  publicEndpoint: optional("S3_PUBLIC_ENDPOINT", "S3 address used in presigned links, when clients reach S3 elsewhere")
})

// Checked as text, then redacted: a check on Config.redacted's value would not name the variable.
const signingSecret = Config.string("BLOB_SIGNING_SECRET").pipe(
  Config.validate({ message: "BLOB_SIGNING_SECRET must be at least 32 characters", validation: (secret) => secret.length >= 32 }),
  Config.map(Redacted.make),
  Config.withDescription("Key signing file links served by the gateway; unset: generated into DATA_DIR"),
  Config.option
)

/**
 * The secret kept in `file`, created (owner-only) on first use. Created exclusively, so two
 * processes starting together on one data directory end up with the same secret.
 *
 * @since 1.0.0
 */
export const persistedSecret = (
  file: string
): Effect.Effect<Redacted.Redacted<string>, BlobStoreError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const read = fs.readFileString(file).pipe(Effect.map((text) => text.trim()))
    const existing = yield* read.pipe(
      Effect.map(Option.some),
      Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "NotFound", () => Effect.succeedNone)
    )
    if (Option.isSome(existing) && existing.value !== "") return Redacted.make(existing.value)
    if (Option.isSome(existing)) {
      return yield* Effect.fail(new Error(`${file} is empty; delete it to generate a new secret`))
    }
    const generated = randomBytes(32).toString("base64url")
    yield* fs.makeDirectory(join(file, ".."), { recursive: true })
    const created = yield* fs.writeFileString(file, `${generated}\n`, { flag: "wx", mode: 0o600 }).pipe(
      Effect.as(true),
      Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "AlreadyExists", () => Effect.succeed(false))
    )
    return Redacted.make(created ? generated : yield* read)
  }).pipe(Effect.mapError((cause) => new BlobStoreError({ op: "open", cause })))

/**
 * The store the configuration asks for. The S3 SDK is loaded only when S3 is configured.
 *
 * @since 1.0.0
 */
export const make = (
  defaults: Defaults
): Effect.Effect<
  BlobStoreService,
  ConfigError.ConfigError | BlobStoreError,
  FileSystem.FileSystem | Scope.Scope
> =>
  Effect.gen(function*() {
    const s3Bucket = yield* bucket
    if (Option.isSome(s3Bucket)) {
      const options = yield* s3
      const S3BlobStore = yield* Effect.promise(() => import("./S3BlobStore.js"))
      return yield* S3BlobStore.make({ ...options, bucket: s3Bucket.value })
    }
    const secret = yield* signingSecret
    return yield* FilesystemBlobStore.make({
      dir: join(defaults.dataDir, "blobs"),
      publicBaseUrl: defaults.publicBaseUrl,
      signingSecret: Option.isSome(secret)
        ? secret.value
        : yield* persistedSecret(join(defaults.dataDir, "blob-signing-secret"))
    })
  })
