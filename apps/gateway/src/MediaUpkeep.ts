/**
 * The background upkeep of kept files, on every process that hosts entities: deleted files'
 * backups are purged once due (30 days after the deletion), and files older than an account's
 * `retention_days` are deleted through the same path as POST /media/delete; blobs left by failed
 * uploads (no file row counts them) are removed. Everything due is
 * in the database, so the work resumes after a restart; several runners share it (claims skip
 * rows another holds).
 */
import { BlobStore } from "@wagate/media/BlobStore"
import * as DomainClock from "@wagate/domain/DomainClock"
import { MediaFiles } from "@wagate/store/MediaFiles"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Upkeep from "./Upkeep.js"

/** Backups purged per claim; the sweep claims again while claims come back full. */
const PURGE_BATCH = 500
/** A claimed blob not removed (its delete failed, or the process stopped first) is tried again this much later. */
const PURGE_RETRY_MS = 60 * 60 * 1000
const DAY_MS = 86_400_000

export const sweep = Effect.gen(function*() {
  const files = yield* MediaFiles
  const blobs = yield* BlobStore
  const now = new Date(yield* DomainClock.now)

  for (const policy of yield* files.retentionPolicies()) {
    const deleted = yield* files.deleteMatching({
      accountId: policy.accountId,
      numberId: null,
      until: new Date(now.getTime() - policy.retentionDays * DAY_MS)
    }, now)
    if (deleted.deleted > 0) {
      yield* Effect.logInfo(`retention deleted ${deleted.deleted} files of account ${policy.accountId}`)
    }
  }

  // Claims are leases: what is not deleted (a failed delete, a stop before it ends) is due again
  // an hour later, and a record goes only once its blob is gone.
  const retryAt = new Date(now.getTime() + PURGE_RETRY_MS)
  while (true) {
    const due = yield* files.claimPurge(now, PURGE_BATCH, retryAt)
    const gone = yield* Effect.forEach(due, (file) =>
      blobs.delete(file.blobKey).pipe(
        Effect.as([file.id]),
        Effect.catchAll((error) => Effect.as(Effect.logWarning("purging a deleted file failed", error), []))
      ), { concurrency: 8 })
    yield* files.purged(gone.flat(), now)
    if (due.length < PURGE_BATCH) break
  }

  // Blobs no file row counts (an upload that timed out and landed later, a delete the store refused).
  while (true) {
    const due = yield* files.claimLeftovers(now, PURGE_BATCH, retryAt)
    const gone = yield* Effect.forEach(due, (key) =>
      blobs.delete(key).pipe(
        Effect.as([key]),
        Effect.catchAll((error) => Effect.as(Effect.logWarning("removing a blob left by a failed upload failed", error), []))
      ), { concurrency: 8 })
    yield* files.removed(gone.flat(), retryAt)
    if (due.length < PURGE_BATCH) return
  }
}).pipe(Effect.withSpan("MediaUpkeep.sweep"))

/** Runs the sweep every `interval`, starting at once, for the life of the layer. */
export const layer = (interval: Duration.DurationInput) => Upkeep.every(interval, "media upkeep", sweep)
