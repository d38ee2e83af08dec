/**
 * Storage accounting in the store, on PostgreSQL and the embedded database: the running totals
 * follow every file added and deleted, deletions keep the message and mark its file deleted,
 * bulk deletion honours its filters, and purging claims only backups that are due.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Accounts } from "../src/Accounts.js"
import * as Database from "../src/Database.js"
import { BACKUP_DAYS, DELETE_BATCH, MediaFiles } from "../src/MediaFiles.js"

/** The bytes of the account's live files, as GET /storage reads them. */
const usedBytes = (snapshot: { readonly usage: ReadonlyArray<{ readonly bytes: number }> }) =>
  snapshot.usage.reduce((sum, u) => sum + u.bytes, 0)

const DAY = 86_400_000
const T0 = Date.parse("2026-11-01T00:00:00Z")

const repositories = (database: Layer.Layer<Database.Database, unknown>) =>
  Layer.mergeAll(Accounts.Default, MediaFiles.Default).pipe(Layer.provideMerge(database))

/** An account with two numbers and `count` messages carrying files on the first. */
const seed = (tag: string) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const sql = yield* SqlClient.SqlClient
    const account = yield* accounts.create({ email: `${tag}-${Math.random()}@example.kz`, company: tag })
    const suffix = String(Math.floor(Math.random() * 1e6)).padStart(6, "0")
    const a = yield* accounts.addNumber(account.id, `7701${suffix}1`)
    const b = yield* accounts.addNumber(account.id, `7702${suffix}2`)
    const message = (numberId: number, chat: string, at: number) =>
      Effect.map(
        sql<{ id: string }>`
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                status, media, created_at)
          VALUES (${account.id}, ${numberId}, 'in', 'network', ${`${chat}@c.us`}, ${chat}, ${`W${Math.random()}`},
                  'image', 'hello', 'received',
                  ${JSON.stringify({ kind: "photo", mime_type: "image/jpeg", filename: null, size: 1, caption: null, deleted: false })}::jsonb,
                  ${new Date(at)})
          RETURNING id`,
        ([r]) => Number(r.id)
      )
    return { account, a, b, message }
  })

const suite = (name: string, database: Layer.Layer<Database.Database, unknown>) =>
  layer(repositories(database), { excludeTestServices: true, timeout: 60_000 })(name, (it) => {
    it.effect("totals follow adds and deletes; the message stays with media.deleted", () =>
      Effect.gen(function*() {
        const files = yield* MediaFiles
        const sql = yield* SqlClient.SqlClient
        const { a, account, b, message } = yield* seed("totals")
        const add = (numberId: number, kind: "photo" | "video", size: number, at: number, chat = "77010000001") =>
          Effect.flatMap(message(numberId, chat, at), (messageId) =>
            Effect.as(
              files.add({
                messageId,
                accountId: account.id,
                numberId,
                chatId: `${chat}@c.us`,
                kind,
                mimeType: kind === "photo" ? "image/jpeg" : "video/mp4",
                filename: null,
                size,
                blobKey: `media/${account.id}/${numberId}/${messageId}`,
                at: new Date(at)
              }),
              messageId
            ))
        const p1 = yield* add(a.id, "photo", 100, T0)
        yield* add(a.id, "video", 1000, T0 + DAY)
        yield* add(b.id, "photo", 10, T0 + 2 * DAY, "77010000002")
        const totals = (rows: ReadonlyArray<{ numberId: number; kind: string; bytes: number; files: number }>) =>
          rows.map((r) => `${r.numberId === a.id ? "a" : "b"}/${r.kind}=${r.bytes}/${r.files}`).sort()
        assert.deepStrictEqual(totals((yield* files.snapshot(account.id)).usage), ["a/photo=100/1", "a/video=1000/1", "b/photo=10/1"])
        assert.strictEqual(usedBytes(yield* files.snapshot(account.id)), 1110)

        const now = new Date(T0 + 10 * DAY)
        assert.deepStrictEqual(yield* files.deleteOne(account.id, b.id, p1, now), { deleted: 0, freedBytes: 0 })
        assert.deepStrictEqual(yield* files.deleteOne(account.id, null, p1, now), { deleted: 1, freedBytes: 100 })
        assert.deepStrictEqual(yield* files.deleteOne(account.id, null, p1, now), { deleted: 0, freedBytes: 0 })
        assert.deepStrictEqual(totals((yield* files.snapshot(account.id)).usage), ["a/video=1000/1", "b/photo=10/1"])
        assert.isTrue(Option.isNone(yield* files.find(account.id, null, p1, null)))
        const [msg] = yield* sql<{ text: string; media: { deleted: boolean; size: number } }>`
          SELECT text, media FROM messages WHERE id = ${p1}`
        assert.deepStrictEqual([msg.text, msg.media.deleted, msg.media.size], ["hello", true, 1])

        // Bulk: until is exclusive, kind and number narrow it.
        const bulk = yield* files.deleteMatching({ accountId: account.id, numberId: null, until: new Date(T0 + 2 * DAY), kind: "photo" }, now)
        assert.deepStrictEqual(bulk, { deleted: 0, freedBytes: 0 })
        const videos = yield* files.deleteMatching({ accountId: account.id, numberId: a.id, until: new Date(T0 + 3 * DAY) }, now)
        assert.deepStrictEqual(videos, { deleted: 1, freedBytes: 1000 })
        assert.deepStrictEqual(totals((yield* files.snapshot(account.id)).usage), ["b/photo=10/1"])

        // Backups are purged BACKUP_DAYS after the deletion, not before, and only once; a claim
        // is a lease: what is not marked purged is due again at its retry time.
        const due30 = new Date(now.getTime() + BACKUP_DAYS * DAY)
        const retry = new Date(due30.getTime() + DAY)
        assert.deepStrictEqual(yield* files.claimPurge(new Date(now.getTime() + (BACKUP_DAYS - 1) * DAY), 100, retry), [])
        const due = yield* files.claimPurge(due30, 100, retry)
        assert.strictEqual(due.length, 2)
        assert.deepStrictEqual(yield* files.claimPurge(due30, 100, retry), [])
        yield* files.purged([due[0].id], due30)
        assert.deepStrictEqual(yield* files.claimPurge(retry, 100, new Date(retry.getTime() + DAY)), [due[1]])
        // A claimed file whose row went meanwhile (its message past the retention): its blob is a leftover.
        yield* sql`DELETE FROM media_files WHERE id = ${due[1].id}`
        yield* files.leaveBehind(due[1].blobKey, retry)
        const left = yield* files.claimLeftovers(retry, 100, new Date(retry.getTime() + DAY))
        assert.deepStrictEqual(left, [due[1].blobKey])
        assert.deepStrictEqual(yield* files.claimLeftovers(new Date(retry.getTime() + DAY), 100, new Date(retry.getTime() + 2 * DAY)), left)
        yield* files.removed(left, new Date(retry.getTime() + 2 * DAY))
        assert.deepStrictEqual(yield* files.claimLeftovers(new Date(retry.getTime() + 3 * DAY), 100, new Date(retry.getTime() + 4 * DAY)), [])
      }))

    it.effect("bulk deletion works through more files than one batch, with chat, since and min_size", () =>
      Effect.gen(function*() {
        const files = yield* MediaFiles
        const sql = yield* SqlClient.SqlClient
        const { a, account } = yield* seed("bulk")
        const count = DELETE_BATCH + 250
        // Messages and files in two statements; sizes 1..count, chat alternating.
        yield* sql`
          WITH msgs AS (
            INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                  status, media, created_at)
            SELECT ${account.id}, ${a.id}, 'in', 'network', CASE WHEN i % 2 = 0 THEN '77010000001@c.us' ELSE '77010000002@c.us' END,
                   '77010000001', 'B' || i, 'document', '', 'received', '{"kind":"document","deleted":false}'::jsonb,
                   ${new Date(T0)}::timestamptz + i * interval '1 second'
            FROM generate_series(1, ${count}) AS i
            RETURNING id, chat_id, created_at
          )
          INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, size, blob_key, created_at)
          SELECT id, ${account.id}, ${a.id}, chat_id, 'document', 'application/pdf',
                 extract(epoch FROM created_at - ${new Date(T0)}::timestamptz)::bigint, 'k/' || id, created_at
          FROM msgs`
        assert.strictEqual(usedBytes(yield* files.snapshot(account.id)), (count * (count + 1)) / 2)
        const now = new Date(T0 + DAY)
        const until = new Date(T0 + (count + 1) * 1000)
        // Even sizes are the first chat; min_size 1001 and since leave out the small ones.
        const some = yield* files.deleteMatching({
          accountId: account.id,
          numberId: a.id,
          until,
          since: new Date(T0 + 11 * 1000),
          chatId: "77010000001@c.us",
          minSize: 1001
        }, now)
        const evens = Array.from({ length: count }, (_, i) => i + 1).filter((n) => n % 2 === 0 && n >= 1001)
        assert.deepStrictEqual(some, { deleted: evens.length, freedBytes: evens.reduce((s, n) => s + n, 0) })
        const rest = yield* files.deleteMatching({ accountId: account.id, numberId: null, until }, now)
        assert.strictEqual(rest.deleted, count - evens.length)
        assert.deepStrictEqual([usedBytes(yield* files.snapshot(account.id)), ((yield* files.snapshot(account.id)).usage).length], [0, 0])
        const [left] = yield* sql<{ n: string }>`
          SELECT count(*) AS n FROM messages WHERE account_id = ${account.id} AND (media->>'deleted')::boolean`
        assert.strictEqual(Number(left.n), count)
      }))

    it.effect("storage above the allowance is charged daily, in the balance's daily charge too", () =>
      Effect.gen(function*() {
        const files = yield* MediaFiles
        const accounts = yield* Accounts
        const { a, account, message } = yield* seed("charge")
        const base = (yield* accounts.funds(account.id, T0)).daily_charge
        const messageId = yield* message(a.id, "77010000001", T0)
        yield* files.add({
          messageId,
          accountId: account.id,
          numberId: a.id,
          chatId: "77010000001@c.us",
          kind: "video",
          mimeType: "video/mp4",
          filename: "big.mp4",
          size: 5 * 1024 ** 3 + 1,
          blobKey: "k/big",
          at: new Date(T0)
        })
        assert.strictEqual((yield* accounts.funds(account.id, T0)).daily_charge, base + 33)
      }))

    it.effect("the policy starts as keep-everything and keeps what was set", () =>
      Effect.gen(function*() {
        const files = yield* MediaFiles
        const { account } = yield* seed("policy")
        assert.deepStrictEqual((yield* files.policy(account.id)).retention_days, null)
        yield* files.setPolicy(account.id, { skip_groups: true, retention_days: 90 })
        yield* files.setPolicy(account.id, { ceiling_bytes: 10_000_000_000 })
        assert.deepStrictEqual(yield* files.policy(account.id), {
          skip_groups: true,
          skip_unknown: false,
          unknown_max_mb: null,
          chat_daily_mb: null,
          ceiling_bytes: 10_000_000_000,
          retention_days: 90
        })
        const retained = yield* files.retentionPolicies()
        assert.deepStrictEqual(retained.filter((r) => r.accountId === account.id), [{ accountId: account.id, retentionDays: 90 }])
      }))
  })

describe("MediaFiles", () => {
  suite("PostgreSQL", Database.layerTest)
  suite("embedded", Database.layerEmbeddedTest)
})
