/**
 * Messages past MESSAGE_RETENTION_DAYS are deleted, not only hidden: a process that hosts
 * entities deletes them when it starts and every hour after, with their files, whose storage is
 * given back at once and whose blobs the media upkeep removes once a deleted file's 30 days of
 * backup are over. Recent messages, unsent ones, the chats and the contacts stay.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { BACKUP_DAYS } from "@wagate/store/MediaFiles"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import { seedFile } from "../support/Archives.js"
import { eventually, provision, seedMessages } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import * as MediaStores from "../support/MediaStores.js"
import { freshDatabase, sql, startGateway, stoppable } from "../support/TestGateway.js"

const DAY = 86_400_000
const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31) % 256)

describe("message retention", () => {
  it.scopedLive("deletes messages past the retention with their files; gives the storage back; keeps recent and unsent ones", () =>
    Effect.gen(function*() {
      const store = yield* MediaStores.filesystem
      const database = yield* freshDatabase
      // Numbers never link, so a pending message stays pending (nothing re-sends it).
      const network = yield* Layer.build(SimulatorDriver.layerTest({ autoScan: false }))
      const clock = ManualClock.make(Date.now())
      const options = {
        blobs: store.layer,
        sim: network,
        domainClock: clock.clock,
        settings: { messageRetentionDays: 30, mediaUpkeepIntervalMs: 100 }
      }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops, { link: false })
      const number = acme.numbers[0]!.id
      const now = clock.now()
      const old = new Date(now - 40 * DAY)
      const peer = "77770000001"
      const [oldIn, oldOut, unsent, recent] = yield* seedMessages(database, acme.accountId, [
        { numberId: number, peer, direction: "in", createdAt: old },
        { numberId: number, peer, direction: "out", createdAt: new Date(now - 39 * DAY) },
        { numberId: number, peer, direction: "out", createdAt: old, status: "pending" },
        { numberId: number, peer, direction: "in", createdAt: new Date(now - 20 * DAY) }
      ])
      const oldFile = yield* seedFile(database, first.blobs, {
        accountId: acme.accountId, numberId: number, peer, filename: "old.pdf", bytes: bytes(3000), createdAt: old
      })
      const recentFile = yield* seedFile(database, first.blobs, {
        accountId: acme.accountId, numberId: number, peer, filename: "new.pdf", bytes: bytes(500),
        createdAt: new Date(now - DAY)
      })
      // A sent message's Idempotency-Key, long expired, that the key upkeep has not deleted yet.
      yield* sql(database, (sql) =>
        sql`INSERT INTO idempotency_keys (account_id, key, request_hash, message_id, status, created_at)
            VALUES (${acme.accountId}, 'order-1', 'h', ${oldOut}, 200, ${old})`)
      const api = yield* first.client(acme.accountKey)
      assert.strictEqual((yield* api.storage.get()).used_bytes, 3500)
      const keys = yield* sql(database, (sql) =>
        sql<{ message_id: string; blob_key: string }>`
          SELECT message_id::text, blob_key FROM media_files WHERE message_id IN (${oldFile.messageId}, ${recentFile.messageId})
          ORDER BY message_id`)
      const [oldBlob, recentBlob] = keys.map((k) => k.blob_key)
      yield* first.stop

      // The next start deletes what is past the 30 days.
      const second = yield* startGateway(database, options)
      const ids = sql(database, (sql) =>
        sql<{ id: string }>`SELECT id::text FROM messages WHERE number_id = ${number} ORDER BY id`)
      const kept = yield* eventually(ids, (rows) => rows.length === 3, 30_000)
      assert.deepStrictEqual(kept.map((r) => Number(r.id)), [unsent, recent, recentFile.messageId])
      assert.isFalse([oldIn, oldOut, oldFile.messageId].some((id) => kept.some((r) => Number(r.id) === id)))

      const secondApi = yield* second.client(acme.accountKey)
      const storage = yield* secondApi.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.files], [500, 1])
      assert.deepStrictEqual(
        (yield* secondApi.messages.list({ urlParams: {} })).messages.map((m) => m.id),
        [recentFile.messageId, recent]
      )
      // The old file's row is gone; its blob is the backup copy for 30 days, then removed.
      const files = yield* sql(database, (sql) =>
        sql<{ message_id: string }>`SELECT message_id::text FROM media_files WHERE account_id = ${acme.accountId}`)
      assert.deepStrictEqual(files.map((f) => Number(f.message_id)), [recentFile.messageId])
      assert.isTrue(Option.isSome(yield* second.blobs.head(oldBlob!)))
      clock.adjust((BACKUP_DAYS + 1) * DAY)
      yield* eventually(second.blobs.head(oldBlob!), Option.isNone, 30_000)
      assert.isTrue(Option.isSome(yield* second.blobs.head(recentBlob!)))

      // The chat and the contact stay: the address book, and who is known.
      const [chat] = (yield* secondApi.chats.list({ urlParams: {} })).chats
      assert.strictEqual(chat?.peer, peer)
      const contacts = yield* sql(database, (sql) =>
        sql<{ known: boolean }>`SELECT first_out_at IS NOT NULL AS known FROM contacts WHERE number_id = ${number} AND phone = ${peer}`)
      assert.deepStrictEqual(contacts.map((c) => c.known), [true])
    }), { timeout: 120_000 })
})
