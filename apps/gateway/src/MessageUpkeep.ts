/**
 * Messages older than `MESSAGE_RETENTION_DAYS` are never returned (docs/api-decisions.md,
 * "Message retention"), so keeping them would only grow the largest table for ever, and their
 * files would go on counting in the account's storage. Every process that hosts entities deletes
 * them every hour, number by number, in short batches, with their files: storage is given back
 * at once, the blobs are removed by the media upkeep once the 30 days a deleted file's backup is
 * kept have passed. `0` keeps every message.
 *
 * Nothing the number's rules read is lost: whether a person is known, and who wrote first, is in
 * `contacts`, which stay (with the chats and their counters: the address book); the trust index
 * counts messages of its last 14 days, which are never deleted whatever the retention.
 */
import * as DomainClock from "@wagate/domain/DomainClock"
import { WINDOW_DAYS } from "@wagate/numbers/policy/TrustIndex"
import { BACKUP_DAYS } from "@wagate/store/MediaFiles"
import { Messages } from "@wagate/store/Messages"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Upkeep from "./Upkeep.js"

/** Messages per statement: a few milliseconds of row locks on the hottest table. */
const BATCH = 1_000
const DAY_MS = 86_400_000

/** Deletes the messages past `retentionDays` at `now`, with their files; answers how many. */
export const sweep = (retentionDays: number) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    const now = yield* DomainClock.now
    const before = new Date(now - Math.max(retentionDays, WINDOW_DAYS) * DAY_MS)
    const backupUntil = new Date(now + BACKUP_DAYS * DAY_MS)
    let total = 0
    for (const numberId of yield* messages.numberIds()) {
      let files = 0
      let bytes = 0
      const deleted = yield* Upkeep.inBatches(
        BATCH,
        Effect.map(messages.expireBatch(numberId, before, backupUntil, BATCH), (batch) => {
          files += batch.files
          bytes += batch.bytes
          return batch.messages
        })
      )
      if (deleted > 0) {
        yield* Effect.logInfo(
          `retention deleted ${deleted} messages of number ${numberId} (${files} files, ${bytes} bytes given back)`
        )
      }
      total += deleted
    }
    return total
  }).pipe(Effect.withSpan("MessageUpkeep.sweep"))

/** Every hour, starting at once; nothing with `retentionDays` 0 (every message is kept). */
export const layer = (retentionDays: number) =>
  retentionDays === 0
    ? Layer.empty
    : Upkeep.every("1 hour", "deleting messages past the retention period", sweep(retentionDays))
