/**
 * The behaviour of an archive export's entity. `Run` moves the export to `running`, writes the
 * archive and records the end with its `export.ready` event in one transaction (`ExportEvents`).
 * A failure ends the export as `failed` with the reason in `error`; an interruption (the runner
 * stops or is lost) ends nothing: the persisted message is delivered again and the archive is
 * started over, and the half-written one never reached the store (see docs/exports.md).
 *
 * @since 1.0.0
 */
import { ExportEntity } from "@wagate/entities/ExportEntity"
import { BlobStore } from "@wagate/media/BlobStore"
import * as DomainClock from "@wagate/domain/DomainClock"
import { ExportEvents } from "@wagate/store/ExportEvents"
import { Messages } from "@wagate/store/Messages"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ArchiveBuilder from "./ArchiveBuilder.js"
import { abortAbandonedUploads } from "./ExportJanitor.js"
import { ARCHIVE_LIFETIME_MS, ExportRecords, type ExportRow } from "./ExportRecords.js"
import { ExportSettings, retainedSince } from "./ExportSettings.js"

/** Where an export's archive is kept. @since 1.0.0 */
export const archiveKey = (row: Pick<ExportRow, "id" | "account_id">) => `exports/${row.account_id}/${row.id}.zip`

const failureText = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const e = failure.value as { readonly _tag?: string; readonly reason?: string; readonly message?: string }
    if (e._tag === "ArchiveFailure" && e.reason) return `The archive could not be written: ${e.reason}`
    if (e._tag === "BlobStoreError") return "Storage failed while the archive was written"
    return e.message || "The archive could not be written"
  }
  return "The archive could not be written: internal error"
}

/** @since 1.0.0 */
export const ExportLive = ExportEntity.toLayer(
  Effect.gen(function*() {
    const records = yield* ExportRecords
    const events = yield* ExportEvents
    const messages = yield* Messages
    const blobs = yield* BlobStore
    const settings = yield* ExportSettings
    const context = yield* Effect.context<ArchiveBuilder.Requirements>()

    const removeAbandonedUploads = (exportId: number) =>
      abortAbandonedUploads(exportId).pipe(
        Effect.provideService(ExportRecords, records),
        Effect.provideService(BlobStore, blobs),
        Effect.catchAllCause((cause) => Effect.logWarning(`export ${exportId}: an abandoned upload could not be removed`, cause))
      )

    const run = Effect.fn("Export.run")(function*(exportId: number) {
      const startedAt = yield* DomainClock.now
      const started = yield* records.start(exportId, startedAt)
      if (Option.isNone(started)) return
      const row = started.value
      yield* Effect.logInfo(`archive export ${exportId} running`)
      // A run started over after its runner was killed: what the killed run uploaded goes first,
      // unless it began too close to this run to tell apart; that goes once this run has ended.
      yield* removeAbandonedUploads(exportId)
      const key = archiveKey(row)
      // Digits WhatsApp knows by another form of the phone name that phone's chat, as in GET /messages.
      const chatId = row.chat === null ? null : yield* messages.chatOf(row.account_id, row.number_id, row.chat)
      const result = yield* ArchiveBuilder.build({
        filter: {
          accountId: row.account_id,
          numberId: row.number_id,
          chatId,
          since: row.since,
          until: row.until,
          retainedSince: retainedSince(settings.messageRetentionDays, startedAt)
        },
        includeMedia: row.include_media,
        key,
        onProgress: (percent) => records.progress(exportId, percent)
      }).pipe(Effect.provide(context), Effect.sandbox, Effect.either)
      const at = yield* DomainClock.now
      if (result._tag === "Left") {
        // Interrupted: this runner is stopping or lost; the message comes back elsewhere.
        if (Cause.isInterruptedOnly(result.left)) return yield* Effect.interrupt
        yield* Effect.logWarning("archive export failed", result.left)
        yield* Effect.ignore(blobs.delete(key))
        yield* events.finish({ _tag: "Failed", exportId, error: failureText(result.left), at: new Date(at) })
        yield* removeAbandonedUploads(exportId)
        return
      }
      const ended = yield* events.finish({
        _tag: "Done",
        exportId,
        size: result.right.size,
        files: result.right.files,
        messages: result.right.messages,
        missingFiles: result.right.missingFiles,
        blobKey: key,
        expiresAt: new Date(at + ARCHIVE_LIFETIME_MS),
        at: new Date(at)
      })
      // Another run ended it first (a repeat after a lost runner): its archive is the one kept.
      if (!ended) yield* Effect.logInfo(`export ${exportId} had already ended`)
      // Ended, so no upload of this export's archive is still wanted.
      yield* removeAbandonedUploads(exportId)
    })

    return ExportEntity.of({
      Run: ({ payload }) => run(payload.exportId)
    })
  }),
  { maxIdleTime: "1 minute" }
)
