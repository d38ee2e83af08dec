/**
 * Files that arrive with messages, through the whole gateway on the simulated network: the
 * message is listed with its file described, the file lands in the blob store with the same
 * bytes and counts in `media_files`; a file over the size limit is skipped with the reason and
 * the message stays.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { DriverUnavailable, type MediaDownload } from "@wagate/whatsapp/WhatsAppDriver"
import { Readable } from "node:stream"
import { eventually, provision, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, simulatedNetwork, startGateway, stoppable } from "../support/TestGateway.js"

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256)

/** A download of `content` that arrives in two chunks. */
const inTwo = (content: Uint8Array): MediaDownload => ({
  readable: Readable.from([Buffer.from(content.subarray(0, 1000)), Buffer.from(content.subarray(1000))]),
  failure: (cause) => new DriverUnavailable({ reason: String(cause) })
})

/** A gateway that keeps incoming files up to 4096 bytes, an account, its first number and a peer. */
const limitedTo4096 = Effect.gen(function*() {
  const database = yield* freshDatabase
  const gateway = yield* startGateway(database, { settings: { incomingMediaMaxBytes: 4096 } })
  const acme = yield* provision(gateway.ops)
  const api = yield* gateway.client(acme.accountKey)
  return { acme, api, database, gateway, number: acme.numbers[0]!, peer: uniquePhone() }
})

describe("incoming files", () => {
  it.scopedLive("an incoming photo is stored in the blob store and shown with its size; one over the limit is skipped", () =>
    Effect.gen(function*() {
      const { acme, api, database, gateway, number, peer } = yield* limitedTo4096
      const byWaId = (waId: string) =>
        Effect.map(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.find((m) => m.wa_message_id === waId))

      const photo = bytes(3000, 1)
      const sent = yield* gateway.sim.inbound({
        to: number.phone,
        from: peer,
        text: "our new shop",
        type: "image",
        media: { mimeType: "image/png", bytes: photo }
      })
      const stored = yield* eventually(byWaId(sent.message.waMessageId), (m) => m?.media_pending === false)
      assert.deepStrictEqual(
        [stored!.direction, stored!.text, stored!.media_skipped, stored!.media_skip_reason, stored!.media],
        ["in", "our new shop", false, null, { kind: "photo", mime_type: "image/png", filename: null, size: 3000, caption: "our new shop", deleted: false }]
      )
      const key = `media/${acme.accountId}/${number.id}/${stored!.id}`
      const chunks = yield* Stream.runCollect(gateway.blobs.get(key))
      assert.isTrue(Buffer.concat([...chunks].map((c) => Buffer.from(c))).equals(Buffer.from(photo)))
      const files = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ kind: string; size: string; mime_type: string }>`
          SELECT kind, size, mime_type FROM media_files WHERE account_id = ${acme.accountId} AND deleted_at IS NULL`).pipe(
        Effect.provide(database)
      )
      assert.deepStrictEqual(files.map((f) => [f.kind, Number(f.size), f.mime_type]), [["photo", 3000, "image/png"]])

      // Over INCOMING_MEDIA_MAX_BYTES: not stored, and said why; the message is kept.
      const big = yield* gateway.sim.inbound({
        to: number.phone,
        from: peer,
        text: "the catalogue",
        type: "document",
        media: { mimeType: "application/pdf", filename: "catalogue.pdf", bytes: bytes(5000, 2) }
      })
      const skipped = yield* eventually(byWaId(big.message.waMessageId), (m) => m?.media_skipped === true)
      assert.deepStrictEqual(
        [skipped!.text, skipped!.media_pending, skipped!.media_skip_reason, skipped!.media?.filename, skipped!.media?.size],
        ["the catalogue", false, "the file is too large to store (5000 bytes, the limit is 4096 bytes)", "catalogue.pdf", null]
      )
      assert.isTrue(Option.isNone(yield* gateway.blobs.head(`media/${acme.accountId}/${number.id}/${skipped!.id}`)))
    }))

  it.scopedLive("a download that passes the limit on the way, or breaks off, is skipped with the reason and stores nothing", () =>
    Effect.gen(function*() {
      const { acme, api, database, gateway, number, peer } = yield* limitedTo4096
      const arrive = (text: string, download: Effect.Effect<MediaDownload>) =>
        Effect.flatMap(
          gateway.sim.inbound({ to: number.phone, from: peer, text, type: "document", media: { mimeType: "application/pdf", download } }),
          (sent) =>
            eventually(
              Effect.map(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.find((m) => m.wa_message_id === sent.message.waMessageId)),
              (m) => m?.media_skipped === true
            )
        )
      // No size announced: the count stops it once it passes 4096 bytes, in its third chunk.
      const endless = Effect.sync((): MediaDownload => ({
        readable: Readable.from((function*() {
          for (let i = 0; i < 1000; i++) yield Buffer.from(bytes(2000, i))
        })()),
        failure: (cause) => new DriverUnavailable({ reason: String(cause) })
      }))
      const tooLarge = yield* arrive("the archive", endless)
      // The network's connection breaks after the first chunk.
      const broken = Effect.sync((): MediaDownload => ({
        readable: Readable.from((function*() {
          yield Buffer.from(bytes(1000, 1))
          throw new Error("connection reset")
        })()),
        failure: (cause) => new DriverUnavailable({ reason: `the media server failed: ${(cause as Error).message}` })
      }))
      const brokenOff = yield* arrive("the scan", broken)
      assert.deepStrictEqual(
        [tooLarge!, brokenOff!].map((m) => [m.text, m.media_pending, m.media_skip_reason, m.media?.size]),
        [
          ["the archive", false, "the file is too large to store (more than the limit of 4096 bytes)", null],
          ["the scan", false, "the file could not be downloaded: the media server failed: connection reset", null]
        ]
      )
      for (const m of [tooLarge!, brokenOff!]) {
        assert.isTrue(Option.isNone(yield* gateway.blobs.head(`media/${acme.accountId}/${number.id}/${m.id}`)))
      }
      const files = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ n: string }>`SELECT count(*) AS n FROM media_files WHERE account_id = ${acme.accountId}`).pipe(Effect.provide(database))
      assert.strictEqual(Number(files[0]!.n), 0)
    }))

  it.scopedLive("a file still pending when its runner died is marked skipped when the number's entity starts again", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const first = yield* stoppable(startGateway(database, { sim: network }))
      const acme = yield* provision(first.ops)
      const number = acme.numbers[0]!
      const peer = uniquePhone()
      // What a runner that died mid-download leaves behind: the message, its file pending.
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                  status, media, media_pending)
            VALUES (${acme.accountId}, ${number.id}, 'in', 'network', ${`${peer}@c.us`}, ${peer}, 'LOST1', 'image', 'look',
                    'received', ${JSON.stringify({ kind: "photo", mime_type: "image/jpeg", filename: null, size: null, caption: "look", deleted: false })}::jsonb,
                    true)`).pipe(Effect.provide(database), Effect.orDie)
      yield* first.stop

      const second = yield* startGateway(database, { sim: network })
      const api = yield* second.client(acme.accountKey)
      const page = yield* eventually(
        api.messages.list({ urlParams: { chat: peer } }),
        (p) => p.messages[0]?.media_pending === false
      )
      assert.deepStrictEqual(
        [page.messages[0]!.text, page.messages[0]!.media_skipped, page.messages[0]!.media_skip_reason],
        ["look", true, "the download was interrupted by a gateway restart"]
      )
    }))

  it.scopedLive("a file whose announced size is wrong is stored whole, with its real size", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database)
      const acme = yield* provision(gateway.ops)
      const number = acme.numbers[0]!
      const api = yield* gateway.client(acme.accountKey)
      const peer = uniquePhone()
      let downloads = 0
      // The network announces one size and serves another; each run downloads again.
      const served = (content: Uint8Array) =>
        Effect.sync(() => {
          downloads++
          return inTwo(content)
        })
      for (const [i, announced] of [2500, 3500].entries()) {
        const photo = bytes(3000, 10 + i)
        downloads = 0
        const sent = yield* gateway.sim.inbound({
          to: number.phone,
          from: peer,
          text: `photo ${i}`,
          type: "image",
          media: { mimeType: "image/png", download: served(photo), size: announced }
        })
        const stored = yield* eventually(
          Effect.map(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.find((m) => m.wa_message_id === sent.message.waMessageId)),
          (m) => m?.media_pending === false
        )
        assert.deepStrictEqual([stored!.media_skipped, stored!.media_skip_reason, stored!.media?.size], [false, null, 3000], `announced ${announced}`)
        const chunks = yield* Stream.runCollect(gateway.blobs.get(`media/${acme.accountId}/${number.id}/${stored!.id}`))
        assert.isTrue(Buffer.concat([...chunks].map((c) => Buffer.from(c))).equals(Buffer.from(photo)), `announced ${announced}`)
        // Once with the announced size (refused, nothing stored), once without it.
        assert.strictEqual(downloads, 2, `announced ${announced}`)
      }
    }))

  it.scopedLive("more files at once than INCOMING_MEDIA_PROCESS_DOWNLOADS: at most that many download together, all are stored", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      // 2 at once in the process; 3 numbers that would each take 2 at once by themselves.
      const gateway = yield* startGateway(database, { settings: { incomingMediaProcessDownloads: 2 } })
      const acme = yield* provision(gateway.ops, { numbers: 3 })
      const api = yield* gateway.client(acme.accountKey)
      let running = 0
      let peak = 0
      let started = 0
      const gate = yield* Deferred.make<void>()
      // A download that holds until the gate opens, as a slow network would.
      const slow = (content: Uint8Array) =>
        Effect.gen(function*() {
          started++
          peak = Math.max(peak, ++running)
          yield* Effect.addFinalizer(() => Effect.sync(() => void running--))
          yield* Deferred.await(gate)
          return inTwo(content)
        })
      const sent: Array<string> = []
      for (const [i, number] of [...acme.numbers, ...acme.numbers].entries()) {
        const arrived = yield* gateway.sim.inbound({
          to: number.phone,
          from: uniquePhone(),
          text: `file ${i}`,
          type: "image",
          media: { mimeType: "image/png", download: slow(bytes(3000 + i, i)), size: 3000 + i }
        })
        sent.push(arrived.message.waMessageId)
      }
      const all = Effect.map(api.messages.list({ urlParams: { limit: 100 } }), (p) =>
        p.messages.filter((m) => sent.includes(m.wa_message_id)))
      // Every message is recorded with its file pending, and two downloads are under way.
      yield* eventually(all, (ms) => ms.length === 6 && ms.every((m) => m.media_pending))
      yield* eventually(Effect.sync(() => started), (n) => n === 2)
      // The other four wait their turn, whatever time passes.
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual([started, running], [2, 2])

      yield* Deferred.succeed(gate, undefined)
      const done = yield* eventually(all, (ms) => ms.length === 6 && ms.every((m) => !m.media_pending))
      assert.deepStrictEqual(
        done.map((m) => [m.media_skipped, m.media?.size]).sort(),
        [0, 1, 2, 3, 4, 5].map((i) => [false, 3000 + i]).sort()
      )
      assert.deepStrictEqual([started, peak, running], [6, 2, 0])
    }))
})
