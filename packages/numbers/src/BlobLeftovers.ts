/**
 * Blobs that may be in the store with no file row to count or remove them: an upload that failed
 * can still land (a store that stalled with the whole body in hand writes it once it answers
 * again), and a delete the store did not take leaves the blob where it was. Each is recorded in
 * `blob_leftovers` for the media upkeep, which deletes it once the store has had time to finish
 * whatever it was doing (and tries again while it cannot).
 */
import * as DomainClock from "@wagate/domain/DomainClock"
import { BlobStore } from "@wagate/media/BlobStore"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Effect from "effect/Effect"

/** How long the media upkeep leaves a recorded blob alone: far longer than any upload's limits. */
export const LEFTOVER_DELAY_MS = 60 * 60 * 1000

export const make = Effect.gen(function*() {
  const blobs = yield* BlobStore
  const files = yield* MediaFiles

  const record = (key: string) =>
    Effect.flatMap(DomainClock.now, (now) => files.leaveBehind(key, new Date(now + LEFTOVER_DELAY_MS)))

  /**
   * After an upload of `key` failed: recorded for the upkeep, and deleted at once if the store
   * allows (without waiting for its answer). Never fails.
   */
  const leaveBehind = (key: string) =>
    Effect.zipRight(record(key), Effect.forkDaemon(Effect.ignore(blobs.delete(key)))).pipe(
      Effect.asVoid,
      Effect.catchAllCause((cause) => Effect.logWarning(`the failed upload ${key} could not be recorded for removal`, cause))
    )

  /**
   * Deletes the blob `key`, which no file row counts; if the store does not delete it now, it is
   * recorded for the upkeep. Never fails.
   */
  const remove = (key: string) =>
    blobs.delete(key).pipe(
      Effect.catchAll((error) =>
        Effect.zipRight(Effect.logWarning(`removing the uncounted file ${key} failed; it is left to the media upkeep`, error), record(key))
      ),
      Effect.catchAllCause((cause) => Effect.logWarning(`the uncounted file ${key} could not be recorded for removal`, cause))
    )

  return { leaveBehind, remove } as const
})
