/**
 * A ZIP archive of a history, assembled by `archiver` and streamed straight into the blob store
 * (a multipart upload on S3): the conversation as `messages.csv` and `messages.json`, a readable
 * transcript per chat under `chats/`, and the stored files under `media/`. Text is deflated;
 * files are stored as they are (photos, video and voice are compressed already). Entries are
 * appended one at a time, each read from the database or the store while it is written, so
 * neither the archive nor any entry is ever whole in memory or on local disk.
 *
 * @since 1.0.0
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import { BlobStore } from "@wagate/media/BlobStore"
import { ZipArchive } from "archiver"
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as HistoryFile from "./HistoryFile.js"
import { type CsvBatch, type HistoryFilter, type HistoryRow, HistoryRows, type MediaFileRow } from "./HistoryRows.js"
import * as Transcript from "./Transcript.js"

/** The archive could not be written: what went wrong, in words for the export's `error`. @since 1.0.0 */
export class ArchiveFailure extends Data.TaggedError("ArchiveFailure")<{
  readonly reason: string
  readonly cause?: unknown
}> {}

/** @since 1.0.0 */
export interface ArchiveRequest {
  readonly filter: HistoryFilter
  readonly includeMedia: boolean
  /** Where the archive goes; nothing is there unless the whole archive was written. */
  readonly key: string
  /** Called with 0-99 as the work advances (at most once per percent). */
  readonly onProgress: (percent: number) => Effect.Effect<void>
}

/** @since 1.0.0 */
export interface ArchiveResult {
  readonly size: number
  /** Files in the archive. */
  readonly files: number
  readonly messages: number
  /** Files that could not be read from the store and are left out. */
  readonly missingFiles: number
}

interface Entry {
  readonly name: string
  /** Stored as it is rather than deflated. */
  readonly store: boolean
  readonly body: Stream.Stream<Uint8Array, unknown>
}

const encoder = new TextEncoder()

/** Bytes of a file that weigh as much as one message in the progress. */
const BYTES_PER_UNIT = 64 * 1024

const describe = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : String(cause)

/** Appends one entry and waits until archiver has written all of it. */
const append = (archive: ZipArchive, entry: Entry) =>
  Effect.flatMap(NodeStream.toReadable(entry.body), (readable) =>
    Effect.async<void, ArchiveFailure>((resume) => {
      const cleanup = () => {
        archive.off("entry", onEntry)
        archive.off("error", onError)
        readable.off("error", onError)
      }
      // Entries go in one at a time, so the next entry written is this one.
      const onEntry = () => {
        cleanup()
        resume(Effect.void)
      }
      const onError = (error: unknown) => {
        cleanup()
        resume(Effect.fail(new ArchiveFailure({ reason: `writing ${entry.name}: ${describe(error)}`, cause: error })))
      }
      archive.on("entry", onEntry)
      archive.on("error", onError)
      // archiver does not listen to its sources: an entry that cannot be read (a file the store
      // stops serving) would be an unhandled 'error', which ends the process, and would leave the
      // archive waiting for the rest of the entry. Its error fails the archive instead, and one
      // that comes after this entry was given up goes nowhere.
      readable.on("error", () => {})
      readable.on("error", onError)
      archive.append(readable, { name: entry.name, store: entry.store })
      return Effect.sync(() => {
        cleanup()
        readable.destroy()
      })
    }))

/** The counted work behind `progress`: messages written (three times each) and file bytes. */
const makeProgress = (total: number, report: (percent: number) => Effect.Effect<void>) => {
  let done = 0
  let reported = -1
  return (units: number) =>
    Effect.suspend(() => {
      done += units
      const percent = total <= 0 ? 99 : Math.min(99, Math.floor((done * 100) / total))
      if (percent <= reported) return Effect.void
      reported = percent
      return report(percent)
    })
}

const mediaName = (file: MediaFileRow): string => {
  const name = file.filename ? Transcript.safeName(file.filename) : `${file.kind}${extensionOf(file.mime_type)}`
  return `media/${Transcript.safeName(file.number_phone ?? "number")}/${file.message_id}-${name}`
}

const extensionOf = (mime: string): string => {
  const sub = mime.split("/")[1]?.split(";")[0]?.trim() ?? ""
  const known: Record<string, string> = { jpeg: ".jpg", png: ".png", webp: ".webp", gif: ".gif", mp4: ".mp4", pdf: ".pdf" }
  return known[sub] ?? (sub.startsWith("ogg") ? ".ogg" : "")
}

/**
 * Writes the archive for `request` into the store under `request.key`, answering what it holds.
 * A failure or an interruption leaves nothing under the key (the store's `put` aborts the upload).
 *
 * @since 1.0.0
 */
export const build = Effect.fn("ArchiveBuilder.build")(function*(request: ArchiveRequest) {
  const history = yield* HistoryRows
  const blobs = yield* BlobStore
  const { filter } = request

  const messages = yield* history.count(filter)
  const totals = request.includeMedia ? yield* history.fileTotals(filter) : { files: 0, bytes: 0 }
  const advance = makeProgress(
    messages * 3 + totals.files + Math.ceil(totals.bytes / BYTES_PER_UNIT),
    request.onProgress
  )
  const counted = (rows: Stream.Stream<HistoryRow>) =>
    Stream.mapChunksEffect(rows, (chunk) => Effect.as(advance(chunk.length), chunk))
  const countedCsv = (batches: Stream.Stream<CsvBatch>) =>
    Stream.tap(batches, (batch) => advance(batch.records))
  let files = 0
  let missingFiles = 0

  const chats = yield* history.chats(filter)
  const textEntries: Array<Entry> = [
    { name: "messages.csv", store: false, body: HistoryFile.csv(countedCsv(history.csv(filter))) },
    { name: "messages.json", store: false, body: HistoryFile.json(counted(history.stream(filter))) },
    ...chats.map((chat, i): Entry => ({
      // The index keeps two chats whose names clean up alike apart.
      name: `chats/${Transcript.safeName(chat.numberPhone ?? String(chat.numberId))}/${
        String(i + 1).padStart(4, "0")
      }-${Transcript.safeName(chat.chatId)}.txt`,
      store: false,
      body: Stream.concat(
        Stream.succeed(encoder.encode(Transcript.heading(chat))),
        Stream.mapChunks(
          counted(history.stream({ ...filter, numberId: chat.numberId, chatId: chat.chatId })),
          (rows) => Chunk.of(encoder.encode(Chunk.join(Chunk.map(rows, Transcript.line), "")))
        )
      )
    }))
  ]
  const mediaEntries: Stream.Stream<Entry> = request.includeMedia
    ? history.files(filter).pipe(
      Stream.mapEffect((file) =>
        // A file gone from the store is counted as missing rather than failing the archive.
        Effect.map(Effect.either(blobs.head(file.blob_key)), (head) => {
          if (Either.isLeft(head) || Option.isNone(head.right)) {
            missingFiles++
            return Option.none<Entry>()
          }
          files++
          return Option.some<Entry>({
            name: mediaName(file),
            store: true,
            body: blobs.get(file.blob_key).pipe(Stream.mapChunksEffect((chunk) =>
              Effect.as(advance(Chunk.reduce(chunk, 0, (n, bytes) => n + bytes.byteLength) / BYTES_PER_UNIT), chunk)
            ))
          })
        })
      ),
      Stream.filterMap((entry) => entry)
    )
    : Stream.empty

  const archive = new ZipArchive({ zlib: { level: 6 } })
  const written = yield* Effect.scoped(Effect.gen(function*() {
    const producer = yield* Stream.concat(Stream.fromIterable(textEntries), mediaEntries).pipe(
      Stream.runForEach((entry) => append(archive, entry)),
      Effect.zipRight(Effect.tryPromise({
        try: () => archive.finalize(),
        catch: (error) => new ArchiveFailure({ reason: `finishing the archive: ${describe(error)}`, cause: error })
      })),
      // A failed entry fails the upload too, so the store keeps nothing.
      Effect.tapErrorCause(() => Effect.sync(() => archive.destroy(new Error("archive entries failed")))),
      Effect.forkScoped
    )
    const upload = yield* Effect.exit(blobs.put(
      request.key,
      NodeStream.fromReadable(() => archive, (error) => new ArchiveFailure({ reason: describe(error), cause: error })),
      { contentType: "application/zip" }
    ))
    if (Exit.isFailure(upload)) {
      // The entries' own failure says more than the broken upload it caused.
      const produced = yield* Fiber.interrupt(producer)
      if (Exit.isFailure(produced) && !Exit.isInterrupted(produced)) yield* produced
      return yield* upload
    }
    yield* Fiber.join(producer)
    return upload.value
  }))
  return { size: written.size, files, messages, missingFiles } satisfies ArchiveResult
})

/** What `build` runs on. @since 1.0.0 */
export type Requirements = HistoryRows | BlobStore
