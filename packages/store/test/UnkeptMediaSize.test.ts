/**
 * Migration 0016 on PostgreSQL: rows the store wrote before it, for sent files that were not kept
 * (over the storage ceiling, or refused by the network), said the file's size; after it they show
 * `size` null as the store writes them now. Kept files, files deleted later, messages still
 * pending and rows already written the new way are left as they are.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { MessageMedia } from "@wagate/domain/Message"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Accounts } from "../src/Accounts.js"
import { Conversations } from "../src/Conversations.js"
import { MediaFiles } from "../src/MediaFiles.js"
import * as Migrations from "../src/Migrations.js"
import { emptyDatabase, migrateUpTo } from "./support/EmptyDatabase.js"

const at = new Date("2026-11-20T10:00:00.000Z")
const later = new Date("2026-11-20T10:00:05.000Z")
const SIZE = 2048
const CEILING = "the storage policy keeps files up to the account's ceiling of 1 KB"
const photo: MessageMedia = { kind: "photo", mime_type: "image/png", filename: null, size: SIZE, caption: null, deleted: false }

interface Shown {
  readonly size: number | null | undefined
  readonly deleted: boolean | undefined
  readonly skipped: boolean
  readonly reason: string | null
  readonly status: string
  readonly updatedAt: string
}

describe("migration 0016", () => {
  it.scoped("sets media.size null on rows written before it for sent files that were not kept", () =>
    Effect.gen(function*() {
      const database = yield* emptyDatabase
      yield* Effect.provide(migrateUpTo(15), database)
      const stores = yield* Layer.build(
        Layer.mergeAll(Accounts.Default, Conversations.Default, MediaFiles.Default).pipe(
          Layer.provide(Layer.succeedContext(database))
        )
      )
      const { accounts, conversations, files, sql } = yield* Effect.all({
        accounts: Accounts,
        conversations: Conversations,
        files: MediaFiles,
        sql: SqlClient.SqlClient
      }).pipe(Effect.provide(stores), Effect.provide(database))
      const account = yield* accounts.create({ email: "before@shop.kz", company: "Shop" })
      const number = yield* accounts.addNumber(account.id, "77010001601")

      let sends = 0
      /** A send recorded as the entity records it, with its attachment's size. */
      const record = (media: MessageMedia | null = photo) => {
        const waMessageId = `3EB0MIGRATION${++sends}`
        return Effect.map(
          conversations.recordOutgoing({
            accountId: account.id,
            numberId: number.id,
            to: `7777000${String(sends).padStart(4, "0")}`,
            type: media === null ? "text" : "image",
            text: "",
            media,
            waMessageId,
            source: "api",
            firstContact: false,
            textHash: "h",
            day: "2026-11-20",
            at,
            phone: number.phone
          }),
          (id) => ({ id, waMessageId })
        )
      }
      const taken = (m: { readonly waMessageId: string }) =>
        conversations.applyAck({ numberId: number.id, waMessageId: m.waMessageId, ack: "sent", at })
      // Counted as the store counted a file then (before 0020 there was no ceiling check in it).
      const keep = (m: { readonly id: number }) =>
        sql`
          INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, filename, size, blob_key,
                                   created_at)
          VALUES (${m.id}, ${account.id}, ${number.id}, '77770000000@c.us', 'photo', 'image/png', NULL, ${SIZE},
                  ${`media/${account.id}/${number.id}/sent-${m.id}`}, ${at})`.pipe(Effect.orDie)
      const rejected = (m: { readonly id: number; readonly waMessageId: string }) =>
        conversations.markRejected({
          accountId: account.id,
          numberId: number.id,
          messageId: m.id,
          waMessageId: m.waMessageId,
          to: "77770000000",
          error: "the simulated network rejected the message",
          firstContact: false,
          day: "2026-11-20",
          at: later
        })
      // What MediaFiles.skip and Conversations.markRejected wrote to the message before this
      // migration: the reason or the failure, and the size left as it was.
      const before = {
        skip: (m: { readonly id: number }) =>
          sql`
            UPDATE messages SET media_pending = false, media_skipped = true, media_skip_reason = ${CEILING},
              updated_at = ${later}
            WHERE id = ${m.id}`,
        markRejected: (m: { readonly id: number }) =>
          sql`
            UPDATE messages SET status = 'failed', error = 'the simulated network rejected the message', updated_at = ${later}
            WHERE id = ${m.id}`
      }

      // Written the old way: over the ceiling, and refused by the network (a photo, a text).
      const overCeiling = yield* record()
      yield* taken(overCeiling)
      yield* before.skip(overCeiling)
      const refused = yield* record()
      yield* before.markRejected(refused)
      const refusedText = yield* record(null)
      yield* before.markRejected(refusedText)
      // Kept files: one still kept, one deleted since, one the network failed after taking it.
      const kept = yield* record()
      yield* taken(kept)
      yield* keep(kept)
      const deleted = yield* record()
      yield* taken(deleted)
      yield* keep(deleted)
      yield* files.deleteOne(account.id, null, deleted.id, later)
      const failedLater = yield* record()
      yield* taken(failedLater)
      yield* keep(failedLater)
      yield* conversations.applyAck({ numberId: number.id, waMessageId: failedLater.waMessageId, ack: "failed", at: later })
      // Still on its way to the network.
      const pending = yield* record()
      // Written the new way already.
      const skippedNow = yield* record()
      yield* taken(skippedNow)
      yield* files.skip(skippedNow.id, CEILING, later)
      const refusedNow = yield* record()
      yield* rejected(refusedNow)
      // An incoming file not kept never had a size.
      const incoming = yield* conversations.recordIncoming({
        accountId: account.id,
        numberId: number.id,
        waMessageId: "INCOMING1",
        fromMe: false,
        chatId: "77770009999@c.us",
        peer: "77770009999",
        peerLid: null,
        name: null,
        isGroup: false,
        groupSubject: null,
        author: null,
        type: "image",
        text: "",
        at,
        media: { ...photo, size: null },
        mediaPending: false,
        mediaSkipped: true,
        mediaSkipReason: "the storage policy does not keep files from group chats"
      }).pipe(Effect.map(Option.getOrThrow))

      const show = Effect.map(
        sql<{ id: string; media: MessageMedia | null; media_skipped: boolean; media_skip_reason: string | null; status: string; updated_at: Date }>`
          SELECT id, media, media_skipped, media_skip_reason, status, updated_at FROM messages WHERE account_id = ${account.id}`,
        (rows) =>
          new Map(rows.map((r): [number, Shown] => [Number(r.id), {
            size: r.media?.size,
            deleted: r.media?.deleted,
            skipped: r.media_skipped,
            reason: r.media_skip_reason,
            status: r.status,
            updatedAt: r.updated_at.toISOString()
          }]))
      )
      const old = yield* show
      const usage = (yield* files.snapshot(account.id)).usage
      assert.deepStrictEqual([old.get(overCeiling.id)?.size, old.get(refused.id)?.size], [SIZE, SIZE])

      yield* Migrations.run.pipe(Effect.provide(database))
      const now = yield* show
      const notSent = now.get(refusedNow.id)!.reason
      assert.strictEqual(notSent, "the message was not sent, so its file was not kept")
      // Both show what the store writes for them now.
      assert.deepStrictEqual(now.get(overCeiling.id), { ...old.get(overCeiling.id)!, size: null })
      assert.deepStrictEqual(now.get(overCeiling.id), { ...now.get(skippedNow.id)!, updatedAt: now.get(overCeiling.id)!.updatedAt })
      assert.deepStrictEqual(now.get(refused.id), { ...old.get(refused.id)!, size: null, skipped: true, reason: notSent })
      assert.deepStrictEqual(
        [now.get(refused.id)!.size, now.get(refused.id)!.skipped, now.get(refused.id)!.reason],
        [now.get(refusedNow.id)!.size, now.get(refusedNow.id)!.skipped, now.get(refusedNow.id)!.reason]
      )
      // Everything else as it was, the storage figures too.
      for (const m of [refusedText, kept, deleted, failedLater, pending, skippedNow, refusedNow, { id: incoming }]) {
        assert.deepStrictEqual(now.get(m.id), old.get(m.id), `message ${m.id}`)
      }
      assert.deepStrictEqual(
        [now.get(kept.id)?.size, now.get(deleted.id)?.deleted, now.get(failedLater.id)?.status, now.get(pending.id)?.status],
        [SIZE, true, "failed", "pending"]
      )
      assert.deepStrictEqual((yield* files.snapshot(account.id)).usage, usage)
    }), 60_000)
})
