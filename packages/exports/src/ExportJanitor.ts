/**
 * The exports' background job, on every process that hosts entities: deletes the archives whose
 * 24 hours have passed (the export becomes `expired`), and hands every unfinished export to its
 * entity again. The second is a safety net for an export recorded by an api process that could
 * not reach the cluster at that moment; a `Run` already stored is de-duplicated by its primary
 * key, so repeating it costs nothing. Several runners doing this at once is harmless.
 *
 * @since 1.0.0
 */
import { ExportEntity } from "@wagate/entities/ExportEntity"
import { BlobStore } from "@wagate/media/BlobStore"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { ExportRecords } from "./ExportRecords.js"
import { ExportSettings } from "./ExportSettings.js"

/** The export an archive key belongs to (`exports/<account>/<id>.zip`). */
const exportIdOf = (key: string | null): number | null => {
  const match = key === null ? null : /^exports\/\d+\/(\d+)\.zip$/.exec(key)
  return match === null ? null : Number(match[1])
}

/** Clocks of a runner and of S3 may differ by this much; an upload this close to a run's start is its own. */
const CLOCK_MARGIN_MS = 5_000

/**
 * Removes what runners killed in the middle of an archive left in the store: incomplete
 * multipart uploads (S3) or temporary files (filesystem) of archives whose export is no longer
 * running, or that began before the export's current run (the run was started over elsewhere).
 * `exportId` limits it to one export. Answers how many were removed.
 *
 * @since 1.0.0
 */
export const abortAbandonedUploads = (exportId?: number) =>
  Effect.gen(function*() {
    const records = yield* ExportRecords
    const blobs = yield* BlobStore
    let removed = 0
    for (const upload of yield* blobs.incompleteUploads("exports/")) {
      const id = exportIdOf(upload.key)
      if (id === null || (exportId !== undefined && id !== exportId)) continue
      const state = yield* records.runState(id)
      const abandoned = Option.match(state, {
        onNone: () => true,
        onSome: (s) =>
          s.status !== "running" || s.started_at === null ||
          upload.startedAt.getTime() < s.started_at.getTime() - CLOCK_MARGIN_MS
      })
      if (!abandoned) continue
      yield* blobs.abortUpload(upload)
      yield* Effect.logInfo(`removed an unfinished upload of export ${id}'s archive, begun ${upload.startedAt.toISOString()}`)
      removed++
    }
    return removed
  }).pipe(Effect.withSpan("ExportJanitor.abortAbandonedUploads"))

/**
 * One pass: expired archives deleted, unfinished exports handed over, abandoned uploads removed.
 *
 * @since 1.0.0
 */
export const sweep = Effect.gen(function*() {
  const records = yield* ExportRecords
  const blobs = yield* BlobStore
  const client = yield* ExportEntity.client
  const now = yield* DomainClock.now
  for (;;) {
    const expiring = yield* records.expiring(now)
    for (const row of expiring) {
      // The row changes only once the blob is gone, so a failed delete is tried again next pass.
      if (row.blob_key !== null) yield* blobs.delete(row.blob_key)
      yield* records.markExpired(row.id)
    }
    if (expiring.length < 100) break
  }
  for (const row of yield* records.unfinished()) {
    yield* client(String(row.id)).Run({ exportId: row.id }, { discard: true }).pipe(
      Effect.timeout("10 seconds"),
      Effect.catchAllCause((cause) => Effect.logWarning(`export ${row.id} could not be handed over`, cause))
    )
  }
  yield* abortAbandonedUploads()
}).pipe(Effect.withSpan("ExportJanitor.sweep"))

/** @since 1.0.0 */
export const ExportJanitor = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* ExportSettings
  yield* sweep.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("export janitor pass failed", cause)),
    Effect.repeat(Schedule.spaced(Duration.millis(settings.janitorIntervalMs))),
    Effect.forkScoped
  )
}))
