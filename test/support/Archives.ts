/**
 * Helpers of the archive export tests: blob stores of both kinds, files seeded as the number
 * entities store them, and archives read back entry by entry (yauzl) and checked by `unzip -t`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as yauzl from "yauzl"
import * as S3rver from "../../packages/media/test/support/S3rver.js"
import type { DatabaseContext } from "./TestGateway.js"

export type StoreKind = "filesystem" | "s3"

const signingSecret = Redacted.make("s".repeat(32))

/**
 * A blob store of the kind for `startGateway`'s `blobs`, for the scope (s3rver in this process for
 * `s3`); the filesystem store's links point at the gateway.
 */
export const storeLayer = (kind: StoreKind) =>
  kind === "filesystem"
    ? Effect.succeed((publicBaseUrl: string) =>
      BlobStore.layerFilesystem({ dir: mkdtempSync(join(tmpdir(), "wagate-blobs-")), publicBaseUrl, signingSecret })
    )
    : Effect.map(
      Layer.build(S3rver.layer),
      (context) => (_: string) => BlobStore.layerS3(S3rver.options(Context.get(context, S3rver.S3Server).endpoint))
    )

export interface SeededFile {
  readonly messageId: number
  readonly bytes: Uint8Array
  readonly filename: string
}

/** A received photo or document whose file is in the store (or, with `stored: false`, missing). */
export const seedFile = (
  database: DatabaseContext,
  blobs: Context.Tag.Service<BlobStore>,
  file: {
    readonly accountId: number
    readonly numberId: number
    readonly peer: string
    readonly filename: string
    readonly bytes: Uint8Array
    readonly caption?: string
    readonly stored?: boolean
    readonly createdAt?: Date
  }
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const key = `media/${file.accountId}/${file.numberId}/${Math.random().toString(16).slice(2)}`
    if (file.stored !== false) yield* blobs.put(key, file.bytes, { contentType: "application/octet-stream" })
    const created = file.createdAt ?? new Date()
    const media = {
      kind: "document",
      mime_type: "application/octet-stream",
      filename: file.filename,
      size: file.bytes.byteLength,
      caption: file.caption ?? null,
      deleted: false
    }
    const [row] = yield* sql<{ id: string }>`
      INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                            status, media, created_at, updated_at)
      VALUES (${file.accountId}, ${file.numberId}, 'in', 'network', ${`${file.peer}@c.us`}, ${file.peer},
              ${"WAF" + Math.random().toString(16).slice(2, 14)}, 'document', ${file.caption ?? ""}, 'received',
              ${JSON.stringify(media)}::jsonb, ${created}, ${created})
      RETURNING id`
    yield* sql`
      INSERT INTO media_files (message_id, account_id, number_id, kind, mime_type, filename, size, blob_key, created_at)
      VALUES (${row.id}, ${file.accountId}, ${file.numberId}, 'document', 'application/octet-stream', ${file.filename},
              ${file.bytes.byteLength}, ${key}, ${created})`
    return { messageId: Number(row.id), bytes: file.bytes, filename: file.filename } satisfies SeededFile
  }).pipe(Effect.provide(database), Effect.orDie)

export interface ArchiveEntry {
  readonly name: string
  /** 0: stored, 8: deflated. */
  readonly method: number
  readonly bytes: Buffer
}

/** Writes the archive to a temporary file, runs `unzip -t` on it, and reads every entry back. */
export const readArchive = (bytes: Uint8Array) =>
  Effect.promise(async () => {
    const path = join(mkdtempSync(join(tmpdir(), "wagate-zip-")), "export.zip")
    writeFileSync(path, bytes)
    const test = execFileSync("unzip", ["-t", path], { encoding: "utf8" })
    const entries = await new Promise<Array<ArchiveEntry>>((resolve, reject) => {
      yauzl.open(path, { lazyEntries: true }, (error, zip) => {
        if (error || !zip) return reject(error)
        const entries: Array<ArchiveEntry> = []
        zip.on("entry", (entry: yauzl.Entry) => {
          zip.openReadStream(entry, (e, stream) => {
            if (e || !stream) return reject(e)
            const chunks: Array<Buffer> = []
            stream.on("data", (c: Buffer) => chunks.push(c))
            stream.on("end", () => {
              entries.push({ name: entry.fileName, method: entry.compressionMethod, bytes: Buffer.concat(chunks) })
              zip.readEntry()
            })
            stream.on("error", reject)
          })
        })
        zip.on("end", () => resolve(entries))
        zip.on("error", reject)
        zip.readEntry()
      })
    })
    return { test, entries }
  })

/** The whole blob, for reading an archive back. */
export const blobBytes = (blobs: Context.Tag.Service<BlobStore>, key: string) =>
  Stream.runCollect(blobs.get(key)).pipe(
    Effect.map((chunks) => Buffer.concat(Array.from(chunks))),
    Effect.orDie
  )
