/**
 * What happens to kept files over time and under the account's storage policy, through the
 * whole gateway on the filesystem store: a deleted file's backup stays 30 days and is purged by
 * the background job, also after a restart; retention deletes old files; the policy skips
 * incoming files and says why; GET /storage shows the policy and the state; a sent attachment
 * that is not kept (over the ceiling, or refused by the network) shows no size, and neither does
 * one whose send a restart left pending and the pending sweep failed, whose file is gone and
 * whose place in the day's limits is given back.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as SqlClient from "@effect/sql/SqlClient"
import { BlobStore } from "@wagate/media/BlobStore"
import { DomainClock } from "@wagate/domain/DomainClock"
import { MediaFiles } from "@wagate/store/MediaFiles"
import type { Hooks } from "@wagate/numbers/NumberHooks"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { execFile } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { sweep } from "../../apps/gateway/src/MediaUpkeep.js"
import * as FileServer from "../support/FileServer.js"
import { eventually, provision, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import * as MediaStores from "../support/MediaStores.js"
import {
  type DatabaseContext,
  freshDatabase,
  type GatewayWithBlobs,
  OPERATOR_TOKEN,
  simulatedNetwork,
  startGateway,
  stoppable
} from "../support/TestGateway.js"

const DAY = 86_400_000
const MB = 1024 * 1024
const GB = 1024 * MB
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256)

/** A peer (or a group author) sends a file; resolves with the message once its file is settled. */
const receive = (
  gateway: GatewayWithBlobs,
  key: string,
  to: string,
  input: { size: number; from?: string; group?: string }
) =>
  Effect.gen(function*() {
    const api = yield* gateway.client(key)
    const from = input.from ?? uniquePhone()
    const sent = yield* gateway.sim.inbound({
      to,
      from,
      text: "",
      type: "image",
      group: input.group === undefined ? undefined : { id: input.group, subject: "Team" },
      media: { mimeType: "image/jpeg", bytes: bytes(input.size, input.size % 251) }
    })
    const chat = input.group === undefined ? from : `${input.group}@g.us`
    return yield* Effect.map(
      eventually(
        Effect.map(api.messages.list({ urlParams: { chat } }), (p) => p.messages.find((m) => m.wa_message_id === sent.message.waMessageId)),
        (m) => m?.media_pending === false
      ),
      (m) => m!
    )
  })

/** A file of `size` bytes kept for the number, counted as any other (the usage triggers run on this insert too). */
const storeBigFile = (database: DatabaseContext, accountId: number, numberId: number, size: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`WITH m AS (
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text, status, media)
          VALUES (${accountId}, ${numberId}, 'in', 'network', '77010000009@c.us', '77010000009', 'BIG1', 'video', '', 'received',
                  ${JSON.stringify({ kind: "video", mime_type: "video/mp4", filename: null, size, caption: null, deleted: false })}::jsonb)
          RETURNING id, chat_id, created_at)
        INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, size, blob_key, created_at)
        SELECT id, ${accountId}, ${numberId}, chat_id, 'video', 'video/mp4', ${size}, 'media/big', created_at FROM m`).pipe(
    Effect.provide(database),
    Effect.orDie
  )

describe("storage upkeep and policy", () => {
  it.scopedLive("a deleted file's backup is kept 30 days, then purged by the background job, across a restart", () =>
    Effect.gen(function*() {
      const store = yield* MediaStores.filesystem
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const clock = ManualClock.make(Date.now())
      const options = {
        blobs: store.layer,
        sim: network,
        domainClock: clock.clock,
        settings: { mediaUpkeepIntervalMs: 100 }
      }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops)
      const number = acme.numbers[0]!
      const message = yield* receive(first, acme.accountKey, number.phone, { size: 2000 })
      const key = `media/${acme.accountId}/${number.id}/${message.id}`
      const deleted = yield* Effect.promise(() =>
        fetch(`${first.url}/api/v1/media/${message.id}`, { method: "DELETE", headers: { authorization: `Bearer ${acme.accountKey}` } })
          .then((r) => r.json())
      )
      assert.deepStrictEqual(deleted, { ok: true, deleted: 1, freed_bytes: 2000 })
      assert.strictEqual((yield* (yield* first.client(acme.accountKey)).storage.get()).used_bytes, 0)
      assert.isTrue(Option.isSome(yield* first.blobs.head(key)), "the backup copy is kept")

      // 29 days on, a sweep leaves the backup alone.
      clock.adjust(29 * DAY)
      yield* sweep.pipe(
        Effect.provide(Layer.mergeAll(MediaFiles.Default, Layer.succeed(BlobStore, first.blobs)).pipe(
          Layer.provide(Layer.succeedContext(database))
        )),
        Effect.provideService(DomainClock, clock.clock)
      )
      assert.isTrue(Option.isSome(yield* first.blobs.head(key)))
      yield* first.stop

      // Past 30 days, a gateway started afresh purges it.
      clock.adjust(2 * DAY)
      const second = yield* startGateway(database, options)
      yield* eventually(second.blobs.head(key), Option.isNone)
      // Marked purged once its blob is deleted, a moment after.
      const [row] = yield* eventually(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ purged: boolean; due: Date | null }>`
            SELECT purged_at IS NOT NULL AS purged, purge_after AS due FROM media_files WHERE message_id = ${message.id}`).pipe(
          Effect.provide(database)
        ),
        (rows) => rows[0]?.purged === true
      )
      assert.deepStrictEqual([row!.purged, row!.due], [true, null])
      const kept = yield* (yield* second.client(acme.accountKey)).messages.get({ path: { id: message.id } })
      assert.strictEqual(kept.media?.deleted, true)
    }))

  it.scopedLive("the policy skips incoming files and says why; retention deletes old files; GET /storage shows both", () =>
    Effect.gen(function*() {
      const store = yield* MediaStores.filesystem
      const database = yield* freshDatabase
      const clock = ManualClock.make(Date.now())
      const gateway = yield* startGateway(database, {
        blobs: store.layer,
        domainClock: clock.clock,
        settings: { mediaUpkeepIntervalMs: 100 }
      })
      const acme = yield* provision(gateway.ops)
      const to = acme.numbers[0]!.phone
      const api = yield* gateway.client(acme.accountKey)
      const setPolicy = (payload: Parameters<typeof gateway.ops.opsStorage.setPolicy>[0]["payload"]) =>
        gateway.ops.opsStorage.setPolicy({ path: { id: acme.accountId }, payload })

      yield* setPolicy({ skip_groups: true, unknown_max_mb: 1 })
      const group = yield* receive(gateway, acme.accountKey, to, { size: 100, group: "120363000000000001" })
      assert.deepStrictEqual(
        [group.media_skipped, group.media_skip_reason],
        [true, "the storage policy does not keep files from group chats"]
      )
      const big = yield* receive(gateway, acme.accountKey, to, { size: MB + 1 })
      assert.deepStrictEqual(
        [big.media_skipped, big.media_skip_reason],
        [true, "the storage policy keeps files from unknown senders up to 1 MB (this one is 1 MB)"]
      )
      yield* setPolicy({ skip_unknown: true })
      const stranger = yield* receive(gateway, acme.accountKey, to, { size: 100 })
      assert.strictEqual(stranger.media_skip_reason, "the storage policy does not keep files from unknown senders")

      yield* setPolicy({ skip_groups: false, skip_unknown: false, unknown_max_mb: null, chat_daily_mb: 1 })
      const peer = uniquePhone()
      const first = yield* receive(gateway, acme.accountKey, to, { size: 700 * 1024, from: peer })
      assert.strictEqual(first.media_skipped, false)
      const second = yield* receive(gateway, acme.accountKey, to, { size: 700 * 1024, from: peer })
      assert.strictEqual(
        second.media_skip_reason,
        "the storage policy keeps up to 1 MB of files per chat a day, reached for this chat today"
      )

      yield* setPolicy({ chat_daily_mb: null, ceiling_bytes: 1_000_000 })
      const over = yield* receive(gateway, acme.accountKey, to, { size: 400_000 })
      assert.strictEqual(over.media_skip_reason, "the account's storage ceiling of 976.6 KB is reached".replace("976.6 KB", "1000000 bytes"))
      let storage = yield* api.storage.get()
      assert.deepStrictEqual(
        [storage.used_bytes, storage.files, storage.ceiling_bytes, storage.state, storage.policy],
        [700 * 1024, 1, 1_000_000, "ok", { skip_groups: false, skip_unknown: false, unknown_max_mb: null, chat_daily_mb: null }]
      )
      yield* setPolicy({ ceiling_bytes: 700 * 1024 })
      assert.strictEqual((yield* api.storage.get()).state, "ceiling_reached")

      // Retention: the file is deleted once older than the period, through the bulk path.
      yield* setPolicy({ ceiling_bytes: null, retention_days: 2 })
      storage = yield* api.storage.get()
      assert.strictEqual(storage.retention_days, 2)
      assert.strictEqual(storage.delete_at, new Date(Date.parse(first.created_at) + 2 * DAY).toISOString())
      clock.adjust(2 * DAY + 60_000)
      storage = yield* eventually(api.storage.get(), (s) => s.files === 0)
      assert.deepStrictEqual([storage.used_bytes, storage.delete_at], [0, null])
      assert.strictEqual((yield* api.messages.get({ path: { id: first.id } })).media?.deleted, true)
    }))

  it.scopedLive("files arriving together on S3 never take the account past its ceiling", () =>
    Effect.gen(function*() {
      const store = yield* MediaStores.s3
      const gateway = yield* startGateway(yield* freshDatabase, { blobs: store.layer })
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const api = yield* gateway.client(acme.accountKey)
      const first = yield* receive(gateway, acme.accountKey, acme.numbers[0]!.phone, { size: 1000 })
      assert.strictEqual(first.media_skipped, false)
      yield* gateway.ops.opsStorage.setPolicy({ path: { id: acme.accountId }, payload: { ceiling_bytes: 1000 + 100_000 } })

      // Six images of 77,930 bytes at once, from six people, to both numbers: only one fits.
      const arrived = yield* Effect.forEach(
        [0, 1, 2, 3, 4, 5],
        (i) => receive(gateway, acme.accountKey, acme.numbers[i % 2]!.phone, { size: 77_930 }),
        { concurrency: "unbounded" }
      )
      const kept = arrived.filter((m) => !m.media_skipped)
      assert.strictEqual(kept.length, 1)
      for (const m of arrived.filter((m) => m.media_skipped)) {
        assert.deepStrictEqual([m.media?.size, m.media_skip_reason], [null, "the account's storage ceiling of 101000 bytes is reached"])
      }
      const storage = yield* api.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.files], [1000 + 77_930, 2])
      // The files not kept are not left in the bucket either.
      for (const m of arrived) {
        const head = yield* gateway.blobs.head(`media/${acme.accountId}/${m.from}/${m.id}`)
        assert.strictEqual(Option.isSome(head), !m.media_skipped, `message ${m.id}`)
      }
    }), { timeout: 60_000 })

  it.scopedLive("files of one chat arriving together on S3 never take the chat past its daily MB", () =>
    Effect.gen(function*() {
      const store = yield* MediaStores.s3
      // Six downloads at once for the number, so that all six files are in flight together.
      const gateway = yield* startGateway(yield* freshDatabase, {
        blobs: store.layer,
        settings: { incomingMediaConcurrency: 6 }
      })
      const acme = yield* provision(gateway.ops)
      const api = yield* gateway.client(acme.accountKey)
      yield* gateway.ops.opsStorage.setPolicy({ path: { id: acme.accountId }, payload: { chat_daily_mb: 1 } })

      // Six images of 400,000 bytes at once from one person: two fit in 1 MB.
      const peer = uniquePhone()
      const arrived = yield* Effect.forEach(
        [0, 1, 2, 3, 4, 5],
        () => receive(gateway, acme.accountKey, acme.numbers[0]!.phone, { size: 400_000, from: peer }),
        { concurrency: "unbounded" }
      )
      const kept = arrived.filter((m) => !m.media_skipped)
      assert.strictEqual(kept.length, 2)
      for (const m of arrived.filter((m) => m.media_skipped)) {
        assert.deepStrictEqual(
          [m.media?.size, m.media_skip_reason],
          [null, "the storage policy keeps up to 1 MB of files per chat a day, reached for this chat today"]
        )
      }
      const storage = yield* api.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.files], [800_000, 2])
      // The files not kept are not left in the bucket either.
      for (const m of arrived) {
        const head = yield* gateway.blobs.head(`media/${acme.accountId}/${m.from}/${m.id}`)
        assert.strictEqual(Option.isSome(head), !m.media_skipped, `message ${m.id}`)
      }
    }), { timeout: 60_000 })

  it.scopedLive("files arriving together on S3 never pass the included 5 GB unpaid", () =>
    Effect.gen(function*() {
      const store = yield* MediaStores.s3
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database, { blobs: store.layer })
      // Two numbers and 1340 KZT: today (660) is paid, and the 680 left cover another day of the
      // numbers (660), but not with a storage pack (660 + 33).
      const acme = yield* provision(gateway.ops, { numbers: 2, credit: 1340 })
      const api = yield* gateway.client(acme.accountKey)
      yield* storeBigFile(database, acme.accountId, acme.numbers[0]!.id, 5 * GB - 1000 - 77_930)

      // Six images of 77,930 bytes at once, from six people, to both numbers: each alone would be
      // kept, within the included 5 GB; the first kept fills it, and each next one would take the
      // account past it, which the balance does not pay for (a day with the pack it needs). Before,
      // the file that passed 5 GB was kept, the balance covering a day at the charge before it.
      const arrived = yield* Effect.forEach(
        [0, 1, 2, 3, 4, 5],
        (i) => receive(gateway, acme.accountKey, acme.numbers[i % 2]!.phone, { size: 77_930 }),
        { concurrency: "unbounded" }
      )
      const kept = arrived.filter((m) => !m.media_skipped)
      assert.strictEqual(kept.length, 1)
      for (const m of arrived.filter((m) => m.media_skipped)) {
        assert.deepStrictEqual(
          [m.media?.size, m.media_skip_reason],
          [null, "storage above the included 5 GB is not paid for: the balance does not cover the storage charge"]
        )
      }
      const storage = yield* api.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.files, storage.state], [5 * GB - 1000, 2, "ok"])
      // The files not kept are not left in the bucket either.
      for (const m of arrived) {
        const head = yield* gateway.blobs.head(`media/${acme.accountId}/${m.from}/${m.id}`)
        assert.strictEqual(Option.isSome(head), !m.media_skipped, `message ${m.id}`)
      }
    }), { timeout: 60_000 })

  it.scopedLive("above the included 5 GB: packs and charges in GET /storage and /balance; unpaid storage keeps no new file", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database)
      const acme = yield* provision(gateway.ops, { credit: 9900 })
      const number = acme.numbers[0]!
      const api = yield* gateway.client(acme.accountKey)
      const before = yield* api.account.balance()
      // A file of 5 GB + 1 byte, counted as any other (the usage triggers run on this insert too).
      yield* storeBigFile(database, acme.accountId, number.id, 5368709121)
      const storage = yield* api.storage.get()
      assert.deepStrictEqual(
        [storage.used_bytes, storage.over_bytes, storage.packs, storage.monthly_charge, storage.daily_charge, storage.state],
        [5368709121, 1, [{ gb: 10, kzt: 990, count: 1 }], 990, 33, "over_allowance"]
      )
      const balance = yield* api.account.balance()
      assert.deepStrictEqual([balance.daily_charge, balance.days_left], [before.daily_charge + 33, Math.floor(before.balance / (before.daily_charge + 33))])

      // The balance no longer covers a day: storage is unpaid, and new incoming files are not kept.
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO ledger (account_id, amount, kind, note) VALUES (${acme.accountId}, ${-9800 * 100}, 'adjustment', 'test')`).pipe(
        Effect.provide(database),
        Effect.orDie
      )
      assert.strictEqual((yield* api.storage.get()).state, "unpaid")
      const skipped = yield* receive(gateway, acme.accountKey, number.phone, { size: 100 })
      assert.strictEqual(
        skipped.media_skip_reason,
        "storage above the included 5 GB is not paid for: the balance does not cover the storage charge"
      )
    }))

  it.scopedLive("a file past the included 5 GB is kept when the balance pays a day of its pack, also while nothing else is charged", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database)
      const GB5 = 5 * GB
      // Each account's only number is paused by the operator after today (330) is paid, and its
      // files fill the included 5 GB but for 1000 bytes: nothing is charged a day.
      const account = (credit: number) =>
        Effect.gen(function*() {
          const acme = yield* provision(gateway.ops, { credit })
          const number = acme.numbers[0]!
          yield* gateway.ops.ops.pause({ path: { id: number.id }, payload: { paused: true } })
          yield* storeBigFile(database, acme.accountId, number.id, GB5 - 1000)
          const api = yield* gateway.client(acme.accountKey)
          assert.deepStrictEqual(
            yield* Effect.map(api.account.balance(), (b) => [b.balance, b.daily_charge, b.active_numbers]),
            [credit - 330, 0, 0]
          )
          return { acme, number, api }
        })

      // 100 KZT pay a day of the 10 GB pack the file needs (33 KZT). Before, the days the balance
      // covered at a daily charge of 0 counted as none, and the file was refused as unpaid.
      const paid = yield* account(430)
      const kept = yield* receive(gateway, paid.acme.accountKey, paid.number.phone, { size: 2000 })
      assert.deepStrictEqual([kept.media_skipped, kept.media_skip_reason, kept.media?.size], [false, null, 2000])
      const storage = yield* paid.api.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.daily_charge, storage.state], [GB5 + 1000, 33, "over_allowance"])
      assert.deepStrictEqual(yield* Effect.map(paid.api.account.balance(), (b) => [b.daily_charge, b.days_left]), [33, 3])

      // 20 KZT do not.
      const short = yield* account(350)
      const refused = yield* receive(gateway, short.acme.accountKey, short.number.phone, { size: 2000 })
      assert.deepStrictEqual(
        [refused.media_skipped, refused.media_skip_reason, refused.media?.size],
        [true, "storage above the included 5 GB is not paid for: the balance does not cover the storage charge", null]
      )
      assert.deepStrictEqual(yield* Effect.map(short.api.storage.get(), (s) => [s.used_bytes, s.state]), [GB5 - 1000, "ok"])
    }), { timeout: 60_000 })

  it.scopedLive("a sent attachment that is not kept shows no size: refused by the network, or over the ceiling", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const clock = ManualClock.make(Date.now())
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: clock.clock })
      const acme = yield* provision(gateway.ops)
      const api = yield* gateway.client(acme.accountKey)
      const send = (to: string, content: object) =>
        Effect.gen(function*() {
          clock.adjust("5 seconds")
          const response = yield* gateway.http.execute(HttpClientRequest.post("/api/v1/messages/send").pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}` }),
            HttpClientRequest.bodyUnsafeJson({ to, ...content })
          ))
          return { status: response.status, body: (yield* response.json) as any }
        }).pipe(Effect.orDie)
      const view = (id: number) =>
        Effect.map(api.messages.get({ path: { id } }), (m) => [m.media?.size, m.media?.deleted, m.media_skipped, m.media_skip_reason])
      const served = (id: number) =>
        Effect.flatMap(gateway.http.get(`/api/v1/media/${id}`, { headers: { authorization: `Bearer ${acme.accountKey}` } }), (r) =>
          Effect.succeed(r.status))

      // The network refuses the message: its file is removed, and the message says so.
      const refusing = uniquePhone()
      yield* gateway.sim.failures(refusing, { mode: "reject", times: 1 })
      const refused = yield* send(refusing, { document: { url: files.url("/report.pdf") } })
      assert.strictEqual(refused.status, 502)
      const [failed] = (yield* api.messages.list({ urlParams: { chat: refusing } })).messages
      assert.deepStrictEqual(yield* view(failed.id), [null, false, true, "the message was not sent, so its file was not kept"])
      assert.strictEqual(yield* served(failed.id), 404)

      // Over the ceiling: the second image is sent but not kept.
      yield* gateway.ops.opsStorage.setPolicy({
        path: { id: acme.accountId },
        payload: { ceiling_bytes: Math.floor(FileServer.PNG.length * 1.5) }
      })
      const peer = uniquePhone()
      const kept = yield* send(peer, { image: { url: files.url("/image.png") } })
      const over = yield* send(peer, { image: { url: files.url("/image.png") } })
      assert.deepStrictEqual([kept.status, over.status], [200, 200])
      assert.deepStrictEqual(yield* view(kept.body.id), [FileServer.PNG.length, false, false, null])
      const skipped = yield* view(over.body.id)
      assert.deepStrictEqual(skipped.slice(0, 3), [null, false, true])
      assert.match(String(skipped[3]), /ceiling/)
      assert.deepStrictEqual([yield* served(kept.body.id), yield* served(over.body.id)], [302, 404])
      assert.strictEqual((yield* api.storage.get()).used_bytes, FileServer.PNG.length)
    }))

  it.scopedLive("attachments sent at once from two numbers never take the account past its ceiling", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const clock = ManualClock.make(Date.now())
      const gateway = yield* startGateway(yield* freshDatabase, { domainClock: clock.clock })
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const api = yield* gateway.client(acme.accountKey)
      yield* gateway.ops.opsStorage.setPolicy({
        path: { id: acme.accountId },
        payload: { ceiling_bytes: Math.floor(FileServer.PNG.length * 1.5) }
      })
      clock.adjust("5 seconds")
      const send = (from: string) =>
        Effect.gen(function*() {
          const response = yield* gateway.http.execute(HttpClientRequest.post("/api/v1/messages/send").pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}` }),
            HttpClientRequest.bodyUnsafeJson({ from, to: uniquePhone(), image: { url: files.url("/image.png") } })
          ))
          assert.strictEqual(response.status, 200)
          const { id } = (yield* response.json) as { id: number }
          return yield* eventually(api.messages.get({ path: { id } }), (m) => m.media?.size != null || m.media_skipped)
        }).pipe(Effect.orDie)
      const sent = yield* Effect.all(acme.numbers.map((n) => send(n.phone)), { concurrency: "unbounded" })
      assert.deepStrictEqual(sent.map((m) => m.media_skipped).sort(), [false, true])
      assert.match(String(sent.find((m) => m.media_skipped)!.media_skip_reason), /ceiling/)
      const storage = yield* api.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.files], [FileServer.PNG.length, 1])
    }))

  it.scopedLive("a send a restart cut off, or one left pending with its file kept, fails after the restart without its file", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const store = yield* MediaStores.filesystem
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const sim = Context.get(network, SimNetwork)
      // A number whose connection is lost stays offline until the restart.
      yield* sim.updateConfig({ reconnectDelayMs: DAY })
      const clock = ManualClock.make(Date.now())
      // Inside the number's entity, once a send is recorded, the network loses the number; then
      // "cut off" stops there, as a restart stops a send in flight, and "offline" goes on: the
      // network does not take it, so it stays pending, answered and with its file kept.
      const offline = new Map<string, string>()
      const numberHooks: Hooks = {
        onSend: () => Effect.void,
        afterRecord: ({ text }) => {
          const phone = offline.get(text)
          if (phone === undefined) return Effect.void
          const lost = Effect.orDie(sim.disconnect(phone, "connection_lost"))
          return text === "cut off" ? Effect.zipRight(lost, Effect.interrupt) : lost
        }
      }
      const options = { blobs: store.layer, sim: network, domainClock: clock.clock, numberHooks }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops, { numbers: 2 })
      const [cut, pending] = acme.numbers
      offline.set("cut off", cut!.phone).set("offline", pending!.phone)
      const send = (gateway: GatewayWithBlobs, from: string, to: string, caption: string) =>
        Effect.gen(function*() {
          clock.adjust("5 seconds")
          const response = yield* gateway.http.execute(HttpClientRequest.post("/api/v1/messages/send").pipe(
            HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}` }),
            HttpClientRequest.bodyUnsafeJson({ from, to, image: { url: files.url("/image.png"), caption } })
          ))
          return response.status
        }).pipe(Effect.orDie)
      const firstApi = yield* first.client(acme.accountKey)
      const peers = [uniquePhone(), uniquePhone()]
      const recorded = (api: typeof firstApi, chat: string) =>
        Effect.map(
          eventually(api.messages.list({ urlParams: { chat } }), (page) => page.messages.length === 1),
          (page) => page.messages[0]!.id
        )

      // Cut off by the restart after its record: its file is in the store, not counted yet.
      yield* Effect.fork(send(first, cut!.phone, peers[0]!, "cut off"))
      const cutId = yield* recorded(firstApi, peers[0]!)
      // Answered, its file kept and counted; the message still waits for the network.
      assert.strictEqual(yield* send(first, pending!.phone, peers[1]!, "offline"), 200)
      const pendingId = yield* recorded(firstApi, peers[1]!)
      yield* eventually(firstApi.storage.get(), (s) => s.used_bytes === FileServer.PNG.length)
      assert.strictEqual((yield* store.keys(`media/${acme.accountId}`)).length, 2)
      for (const id of [cutId, pendingId]) assert.strictEqual((yield* firstApi.messages.get({ path: { id } })).status, "pending")
      yield* first.stop

      // After the restart the numbers connect again and their pending sends fail: no file is
      // left of them, none is counted, and they show it as a send the network refused does.
      const second = yield* startGateway(database, options)
      const api = yield* second.client(acme.accountKey)
      for (const id of [cutId, pendingId]) {
        const failed = yield* eventually(api.messages.get({ path: { id } }), (m) => m.status === "failed")
        assert.deepStrictEqual(
          [failed.media?.size, failed.media?.deleted, failed.media_skipped, failed.media_skip_reason],
          [null, false, true, "the message was not sent, so its file was not kept"]
        )
        const served = yield* second.http.get(`/api/v1/media/${id}`, { headers: { authorization: `Bearer ${acme.accountKey}` } })
        assert.strictEqual(served.status, 404)
      }
      const storage = yield* api.storage.get()
      assert.deepStrictEqual([storage.used_bytes, storage.files], [0, 0])
      assert.deepStrictEqual(yield* store.keys(`media/${acme.accountId}`), [])
      // Each was a first message to a new person: both the message and the new contact are
      // given back to the day's limits.
      for (const number of [cut!, pending!]) {
        const limits = yield* eventually(
          api.limits.get({ urlParams: { from: number.phone } }),
          (l) => l.used.messages === 0 && l.used.new_contacts === 0
        )
        assert.deepStrictEqual(limits.used, { messages: 0, new_contacts: 0, checks: 0 })
      }
    }), { timeout: 60_000 })

  it.scopedLive("the operator CLI sets and shows the policy, and GET /storage shows what it set", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const cli = (...args: Array<string>) =>
        Effect.promise(async () => {
          const { stdout } = await promisify(execFile)(
            process.execPath,
            ["--import", "tsx", join(import.meta.dirname, "../../apps/gateway/src/cli.ts"), ...args],
            { env: { ...process.env, WAGATE_URL: gateway.url, OPERATOR_TOKEN } }
          ).catch((e) => e as { stdout: string })
          return JSON.parse(stdout)
        })
      const account = String(acme.accountId)
      const set = yield* cli("storage", "policy", "--account", account, "--skip-groups", "on", "--retention-days", "90", "--unknown-max-mb", "5")
      assert.deepStrictEqual(set, {
        skip_groups: true,
        skip_unknown: false,
        unknown_max_mb: 5,
        chat_daily_mb: null,
        ceiling_bytes: null,
        retention_days: 90
      })
      const cleared = yield* cli("storage", "policy", "--account", account, "--unknown-max-mb", "off")
      assert.deepStrictEqual([cleared.skip_groups, cleared.unknown_max_mb, cleared.retention_days], [true, null, 90])
      assert.deepStrictEqual(yield* cli("storage", "show", "--account", account), cleared)
      const storage = yield* (yield* gateway.client(acme.accountKey)).storage.get()
      assert.deepStrictEqual([storage.policy.skip_groups, storage.retention_days], [true, 90])
    }), { timeout: 180_000 })
})
