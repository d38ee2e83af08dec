/**
 * The message retention's deletion in the store, on PostgreSQL and the embedded database:
 * old messages go with their file rows (a kept file's storage given back, its blob left to the
 * media upkeep from the backup date; a deleted file's from its own purge date), in batches;
 * unsent messages, files still downloading and recent messages stay.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Accounts } from "../src/Accounts.js"
import * as Database from "../src/Database.js"
import { MediaFiles } from "../src/MediaFiles.js"
import { Messages } from "../src/Messages.js"

/** The bytes of the account's live files, as GET /storage reads them. */
const usedBytes = (snapshot: { readonly usage: ReadonlyArray<{ readonly bytes: number }> }) =>
  snapshot.usage.reduce((sum, u) => sum + u.bytes, 0)

const DAY = 86_400_000
const NOW = Date.parse("2026-11-01T00:00:00Z")

const repositories = (database: Layer.Layer<Database.Database, unknown>) =>
  Layer.mergeAll(Accounts.Default, MediaFiles.Default, Messages.Default).pipe(Layer.provideMerge(database))

const suite = (name: string, database: Layer.Layer<Database.Database, unknown>) =>
  layer(repositories(database), { excludeTestServices: true, timeout: 60_000 })(name, (it) => {
    it.effect("deletes old messages with their files, in batches; keeps unsent, downloading and recent ones", () =>
      Effect.gen(function*() {
        const accounts = yield* Accounts
        const files = yield* MediaFiles
        const messages = yield* Messages
        const sql = yield* SqlClient.SqlClient
        const account = yield* accounts.create({ email: `r-${Math.random()}@example.kz`, company: "r" })
        const number = yield* accounts.addNumber(account.id, `7703${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`)
        const message = (ageDays: number, status = "received", mediaPending = false) =>
          Effect.map(
            sql<{ id: string }>`
              INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                    status, media_pending, created_at)
              VALUES (${account.id}, ${number.id}, 'in', 'network', '77770000001@c.us', '77770000001', ${`W${Math.random()}`},
                      'document', '', ${status}, ${mediaPending}, ${new Date(NOW - ageDays * DAY)})
              RETURNING id`,
            ([r]) => Number(r.id)
          )
        const file = (messageId: number, size: number) =>
          files.add({
            messageId, accountId: account.id, numberId: number.id, chatId: "77770000001@c.us", kind: "document",
            mimeType: "application/pdf", filename: null, size, blobKey: `b/${messageId}`, at: new Date(NOW - 40 * DAY)
          })
        const kept = yield* message(42)
        yield* file(kept, 1000)
        const deleted = yield* message(41)
        yield* file(deleted, 10)
        yield* files.deleteOne(account.id, null, deleted, new Date(NOW - 5 * DAY))
        const plain = yield* message(40)
        const unsent = yield* message(40, "pending")
        const downloading = yield* message(40, "received", true)
        const recent = yield* message(20)
        assert.strictEqual(usedBytes(yield* files.snapshot(account.id)), 1000)

        const before = new Date(NOW - 30 * DAY)
        const backupUntil = new Date(NOW + 30 * DAY)
        const first = yield* messages.expireBatch(number.id, before, backupUntil, 2)
        assert.deepStrictEqual(first, { messages: 2, files: 1, bytes: 1000 })
        const second = yield* messages.expireBatch(number.id, before, backupUntil, 2)
        assert.deepStrictEqual(second, { messages: 1, files: 0, bytes: 0 })
        assert.deepStrictEqual(yield* messages.expireBatch(number.id, before, backupUntil, 2), { messages: 0, files: 0, bytes: 0 })

        const left = yield* sql<{ id: string }>`SELECT id::text FROM messages WHERE number_id = ${number.id} ORDER BY id`
        assert.deepStrictEqual(left.map((r) => Number(r.id)), [unsent, downloading, recent])
        assert.isFalse(left.some((r) => [kept, deleted, plain].includes(Number(r.id))))
        assert.strictEqual(usedBytes(yield* files.snapshot(account.id)), 0)
        // The kept file's blob goes after the backup period; the deleted one's on its own purge date.
        const leftovers = yield* sql<{ blob_key: string; remove_after: Date }>`
          SELECT blob_key, remove_after FROM blob_leftovers WHERE blob_key IN (${`b/${kept}`}, ${`b/${deleted}`})
          ORDER BY blob_key`
        assert.deepStrictEqual(
          leftovers.map((l) => [l.blob_key, new Date(l.remove_after).getTime()]).sort(),
          [[`b/${deleted}`, NOW + 25 * DAY], [`b/${kept}`, backupUntil.getTime()]].sort()
        )
      }))
  })

describe("message retention in the store", () => {
  suite("PostgreSQL", Database.layerTest)
  suite("embedded", Database.layerEmbeddedTest)
})
