/**
 * The gateway on the Baileys driver, as the operator and the API see it: the driver is the real
 * one with its auth state in the gateway's PostgreSQL; only the socket is a fake emitting
 * Baileys' events. Linking by QR (every refresh as text and PNG) and by pairing code through the
 * operator API, credentials in PostgreSQL, `session.status` events, a message WhatsApp replays
 * after a reconnect stored once, server error 463 closing new chats (only while WhatsApp's
 * reach-out time lock is active) in the number's limits and shown on its connection, incoming
 * files in the blob store, view-once messages kept as placeholders, messages not decrypted
 * counted, group chats named by their subject, a first message to a phone without WhatsApp failed
 * as on the simulator.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Hooks } from "@wagate/numbers/NumberHooks"
import * as BaileysDriver from "@wagate/whatsapp/BaileysDriver"
import * as Linking from "@wagate/whatsapp/baileys/Linking"
import * as PgAuthStore from "@wagate/whatsapp/baileys/PgAuthStore"
import { proto, type WAMessage } from "@whiskeysockets/baileys"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as VoiceNote from "@wagate/whatsapp/VoiceNote"
import { spawnSync } from "node:child_process"
import { createServer } from "node:http"
import { opusHead } from "../../packages/whatsapp/test/baileys/support/Audio.js"
import * as FakeSocket from "../../packages/whatsapp/test/baileys/support/FakeSocket.js"
import * as FileServer from "../support/FileServer.js"
import { eventually, metricValue, provision, uniquePhone } from "../support/Fixtures.js"
import {
  type DatabaseContext,
  freshDatabase,
  OPERATOR_TOKEN,
  type RunningGateway,
  simulatedNetwork,
  startGateway,
  stoppable
} from "../support/TestGateway.js"

type DriverOverrides = Parameters<typeof BaileysDriver.layerTest>[0]

/** A gateway whose network is the Baileys driver on fake sockets, auth state in its database. */
const baileysGatewayWith = (overrides: DriverOverrides = {}, on?: DatabaseContext, numberHooks?: Hooks) => Effect.gen(function*() {
  const database = on ?? (yield* freshDatabase)
  const fake = FakeSocket.make()
  const driver = yield* Layer.build(
    BaileysDriver.layerTest({ logLevel: "silent", backoffBaseMs: 20, backoffMaxMs: 40, ...overrides }).pipe(
      Layer.provide(fake.layer),
      Layer.provide(PgAuthStore.layer),
      Layer.provide(Layer.succeedContext(database))
    )
  )
  // The simulator's control surface stays mounted but unused: the entities get the Baileys driver.
  const gateway = yield* startGateway(database, {
    sim: Context.merge(yield* simulatedNetwork, driver),
    settings: { webhookAllowPrivateUrls: true },
    numberHooks
  })
  return { gateway, fake }
})
const baileysGateway = baileysGatewayWith()

/**
 * Runs `start` (an add or a link: it waits for the link to begin, up to 5 s) while WhatsApp
 * answers on the socket it opens as `answer` does (a QR), as a phone's link goes; its answer.
 */
const answering = <A, E>(fake: FakeSocket.FakeFactory, start: Effect.Effect<A, E>, answer: (socket: FakeSocket.FakeSocket) => void) =>
  Effect.gen(function*() {
    const sockets = fake.sockets.length
    const started = yield* Effect.fork(start)
    yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n > sockets)
    answer(fake.latest())
    return yield* Fiber.join(started)
  })

/** An account with a webhook endpoint (disabled: nothing is sent), so its events are written to the outbox. */
const account = (gateway: Effect.Effect.Success<typeof baileysGateway>["gateway"]) =>
  Effect.gen(function*() {
    const acme = yield* provision(gateway.ops, { numbers: 0 })
    yield* gateway.ops.opsWebhooks.set({
      path: { id: acme.accountId },
      payload: { url: "http://127.0.0.1:9/hook", enabled: false }
    })
    return acme
  })

const query = <A extends object>(database: DatabaseContext, f: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(database), Effect.orDie)

const sessionEvents = (database: DatabaseContext, numberId: number) =>
  query<{ status: string; reason: string | null }>(database, (sql) =>
    sql`SELECT payload->'data'->>'connection_status' AS status, payload->'data'->>'reason' AS reason
        FROM webhook_outbox WHERE event = 'session.status' AND (payload->'data'->>'number_id')::int = ${numberId}
        ORDER BY id`)

const textFrom = (peer: string, id: string, text: string): WAMessage => ({
  key: { remoteJid: `${peer}@s.whatsapp.net`, id, fromMe: false },
  message: { conversation: text },
  messageTimestamp: Math.floor(Date.now() / 1000),
  pushName: "Aigerim"
})

describe("the gateway on the Baileys driver", () => {
  it.scopedLive("linking by QR through the operator API: each refresh as text and PNG, the scan, WORKING; credentials in PostgreSQL", () =>
    Effect.gen(function*() {
      const { fake, gateway } = yield* baileysGateway
      const acme = yield* account(gateway)
      const phone = uniquePhone()
      const added = yield* gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone } })
      const id = added.number.id
      assert.strictEqual(added.link.status, "STARTING")
      assert.strictEqual(fake.sockets.length, 1)
      const status = gateway.ops.ops.linkStatus({ path: { id } })

      fake.latest().qr("2@ref-one,noise,identity,adv")
      const first = yield* eventually(status, (l) => l.qr === "2@ref-one,noise,identity,adv")
      assert.strictEqual(first.status, "SCAN_QR_CODE")
      assert.match(first.qr_image ?? "", /^data:image\/png;base64,iVBORw0KGgo/)
      fake.latest().qr("2@ref-two,noise,identity,adv")
      const second = yield* eventually(status, (l) => l.qr === "2@ref-two,noise,identity,adv")
      assert.notStrictEqual(second.qr_image, first.qr_image)

      fake.latest().pairSuccess(phone)
      fake.latest().close(515, "Stream Errored (restart required)")
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === 2)
      fake.latest().open()
      const working = yield* eventually(status, (l) => l.status === "WORKING")
      assert.deepStrictEqual([working.qr, working.qr_image, working.pairing_code], [null, null, null])

      const creds = yield* query<{ me: string }>(gateway.database, (sql) =>
        sql`SELECT value->'me'->>'id' AS me FROM wa_auth_state WHERE number_id = ${id} AND kind = 'creds'`)
      assert.deepStrictEqual(creds.map((r) => r.me), [`${phone}:7@s.whatsapp.net`])
      const events = yield* sessionEvents(gateway.database, id)
      assert.deepStrictEqual(events.map((e) => e.status), ["STARTING", "SCAN_QR_CODE", "STARTING", "WORKING"])
    }))

  it.scopedLive("linking by pairing code: the 8-character code WhatsApp gives for the number's phone", () =>
    Effect.gen(function*() {
      const { fake, gateway } = yield* baileysGateway
      const acme = yield* account(gateway)
      const phone = uniquePhone()
      const added = yield* answering(fake, gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone, method: "code" } }), (socket) => {
        socket.pairingOutcome = { _tag: "ok", value: "K7PQ-3XWZ" }
        socket.qr("2@ref-one")
      })
      const waiting = yield* eventually(gateway.ops.ops.linkStatus({ path: { id: added.number.id } }), (l) => l.pairing_code !== null)
      assert.deepStrictEqual([waiting.status, waiting.pairing_code, waiting.qr], ["SCAN_QR_CODE", "K7PQ3XWZ", null])
      assert.deepStrictEqual(fake.latest().pairingRequests, [phone])
    }))

  it.scopedLive("a message WhatsApp replays after a reconnect is stored and announced once; 463 closes new chats", () =>
    Effect.gen(function*() {
      const { fake, gateway, acme, id, phone, api } = yield* workingNumberWith()
      const peer = uniquePhone()
      const chat = api.messages.list({ urlParams: { chat: peer } })

      fake.latest().upsert([textFrom(peer, "3A0001", "Is the shop open?")])
      yield* eventually(chat, (p) => p.messages.length === 1)
      // The connection drops; on reconnect WhatsApp delivers what it is not sure we got, and more.
      fake.latest().close(428)
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === 3)
      fake.latest().open()
      fake.latest().upsert([textFrom(peer, "3A0001", "Is the shop open?"), textFrom(peer, "3A0002", "Hello?")], "append")
      const page = yield* eventually(chat, (p) => p.messages.length === 2)
      assert.deepStrictEqual(page.messages.map((m) => m.text).sort(), ["Hello?", "Is the shop open?"])
      const announced = yield* query<{ n: string }>(gateway.database, (sql) =>
        sql`SELECT count(*) AS n FROM webhook_outbox WHERE event = 'message' AND account_id = ${acme.accountId}`)
      assert.strictEqual(Number(announced[0]!.n), 2)
      const events = yield* sessionEvents(gateway.database, id)
      assert.deepStrictEqual(events.slice(-2).map((e) => e.status), ["STARTING", "WORKING"])
      assert.match(events.at(-2)!.reason ?? "", /connection lost/)

      // WhatsApp answers a send with 463: the message failed; WhatsApp is asked whether the account
      // is restricted. First it is not (a contact without a trusted-contact token): limits unchanged.
      const before = yield* api.limits.get({ urlParams: { from: phone } })
      assert.isAbove(before.limits.new_contacts_per_day, 0)
      const connection = api.numbers.connection({ path: { id } })
      assert.isFalse("restriction" in (yield* connection))
      const refused = (waId: string) =>
        fake.latest().emit("messages.update", [{
          key: { remoteJid: `${peer}@s.whatsapp.net`, id: waId, fromMe: true },
          update: { status: 0, messageStubParameters: ["463"] }
        }])
      fake.latest().timelock = { isActive: false }
      refused("3EB0NOTOKEN")
      yield* eventually(Effect.sync(() => fake.latest().timelockQueries), (n) => n === 1)
      assert.strictEqual((yield* api.limits.get({ urlParams: { from: phone } })).limits.new_contacts_per_day, before.limits.new_contacts_per_day)
      // Then it is, for six hours: the number may not start new chats until then.
      const ends = new Date(Math.floor(Date.now() / 1000) * 1000 + 6 * 3600_000)
      fake.latest().timelock = { isActive: true, timeEnforcementEnds: ends, enforcementType: "BIZ_QUALITY" }
      refused("3EB0RESTRICTED")
      const after = yield* eventually(api.limits.get({ urlParams: { from: phone } }), (l) => l.limits.new_contacts_per_day === 0)
      assert.strictEqual(after.limits.messages_per_day, before.limits.messages_per_day)
      // The entity applies the restriction before its row is written: poll the row too.
      const [row] = yield* eventually(
        query<{ restricted: boolean | null; reason: string | null }>(gateway.database, (sql) =>
          sql`SELECT restricted_until > now() AS restricted, status_reason AS reason FROM numbers WHERE id = ${id}`),
        (rows) => rows[0]?.restricted === true
      )
      assert.deepStrictEqual([row!.restricted, /BIZ_QUALITY/.test(row!.reason ?? "")], [true, true])

      // The number's connection says so, with when it ends, and still does after a reconnect.
      const restricted = yield* connection
      assert.strictEqual(restricted.status, "WORKING")
      assert.match(restricted.restriction?.reason ?? "", /restricted the account from reaching out \(BIZ_QUALITY\)/)
      assert.strictEqual(Date.parse(restricted.restriction?.until ?? ""), ends.getTime())
      fake.latest().close(428)
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === 4)
      fake.latest().open()
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")
      assert.deepStrictEqual((yield* connection).restriction, restricted.restriction)

      // WhatsApp lifts it: new chats open again.
      fake.latest().emit("connection.update", { reachoutTimeLock: { isActive: false } })
      yield* eventually(api.limits.get({ urlParams: { from: phone } }), (l) => l.limits.new_contacts_per_day > 0)
      // As above, the row that the connection is read from is written after the entity applied it.
      yield* eventually(connection, (c) => !("restriction" in c))
    }))
})

/** A gateway on fake sockets with one WORKING number, an account key and its API client. */
const workingNumberWith = (overrides: DriverOverrides = {}, on?: DatabaseContext, numberHooks?: Hooks) => Effect.gen(function*() {
  const { fake, gateway } = yield* baileysGatewayWith(overrides, on, numberHooks)
  const acme = yield* account(gateway)
  const phone = uniquePhone()
  const added = yield* answering(fake, gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone } }), (socket) => socket.qr("2@ref-one"))
  const id = added.number.id
  fake.latest().pairSuccess(phone)
  fake.latest().close(515)
  yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === 2)
  fake.latest().open()
  yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")
  const key = (yield* gateway.ops.ops.issueKey({ payload: { account_id: acme.accountId } })).key
  const api = yield* gateway.client(key)
  return { fake, gateway, acme, id, phone, api }
})
const workingNumber = workingNumberWith()

/** A WORKING number on a gateway of its own scope, closed to restart the gateway on the same database. */
const beforeRestart = (overrides: DriverOverrides) =>
  Effect.gen(function*() {
    const database = yield* freshDatabase
    const { stop, ...first } = yield* stoppable(workingNumberWith(overrides, database))
    return { ...first, database, restart: stop }
  })

const fileFrom = (peer: string, id: string, message: WAMessage["message"]): WAMessage => ({
  key: { remoteJid: `${peer}@s.whatsapp.net`, id, fromMe: false },
  message,
  messageTimestamp: Math.floor(Date.now() / 1000),
  pushName: "Aigerim"
})

const blobBytes = (gateway: Effect.Effect.Success<typeof workingNumber>["gateway"], key: string) =>
  Effect.map(Stream.runCollect(gateway.blobs.get(key)), (chunks) => Buffer.concat([...chunks].map((c) => Buffer.from(c))))

describe("incoming files on the Baileys driver", () => {
  it.scopedLive("recorded at once, the file downloaded in the background into the blob store; a failed download is skipped with its reason", () =>
    Effect.gen(function*() {
      const { acme, api, fake, gateway, id } = yield* workingNumber
      const peer = uniquePhone()
      const byWaId = (waId: string) =>
        Effect.map(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.find((m) => m.wa_message_id === waId))

      // A download that never ends: the message is there at once, its file pending, and the
      // next message is not held up behind it.
      fake.setDownload({ _tag: "hang" })
      fake.latest().upsert([fileFrom(peer, "3A0100", { imageMessage: { mimetype: "image/jpeg", caption: "the blue one", fileLength: 3 } })])
      const pending = yield* eventually(byWaId("3A0100"), (m) => m !== undefined)
      assert.deepStrictEqual(
        [pending!.type, pending!.text, pending!.media_pending, pending!.media_skipped, pending!.media],
        ["image", "the blue one", true, false, { kind: "photo", mime_type: "image/jpeg", filename: null, size: null, caption: "the blue one", deleted: false }]
      )
      fake.latest().upsert([textFrom(peer, "3A0101", "Did you get it?")])
      yield* eventually(byWaId("3A0101"), (m) => m !== undefined)

      // The file arrives: stored under the message, with the same bytes.
      const bytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 7, 7])
      fake.setDownload({ _tag: "ok", value: bytes })
      fake.latest().upsert([fileFrom(peer, "3A0102", { documentMessage: { mimetype: "application/pdf", fileName: "price.pdf", fileLength: 6 } })])
      const stored = yield* eventually(byWaId("3A0102"), (m) => m?.media_pending === false)
      assert.deepStrictEqual(
        [stored!.media_skipped, stored!.media_skip_reason, stored!.media],
        [false, null, { kind: "document", mime_type: "application/pdf", filename: "price.pdf", size: 6, caption: null, deleted: false }]
      )
      const key = `media/${acme.accountId}/${id}/${stored!.id}`
      assert.deepStrictEqual([...(yield* blobBytes(gateway, key))], [...bytes])
      assert.deepStrictEqual(Option.map(yield* gateway.blobs.head(key), (h) => h.contentType), Option.some("application/pdf"))
      const files = yield* query<{ size: string; kind: string; account_id: string; number_id: string; blob_key: string }>(
        gateway.database,
        (sql) => sql`SELECT size, kind, account_id, number_id, blob_key FROM media_files WHERE message_id = ${stored!.id}`
      )
      assert.deepStrictEqual(files.map((f) => [Number(f.size), f.kind, Number(f.account_id), Number(f.number_id), f.blob_key]), [
        [6, "document", acme.accountId, id, key]
      ])

      // WhatsApp no longer has the file: the message stays, its file skipped with the reason.
      fake.setDownload({ _tag: "fail", error: new Error("media expired") })
      fake.latest().upsert([fileFrom(peer, "3A0103", { audioMessage: { mimetype: "audio/ogg; codecs=opus", ptt: true } })])
      const skipped = yield* eventually(byWaId("3A0103"), (m) => m?.media_skipped === true)
      assert.deepStrictEqual(
        [skipped!.type, skipped!.media_pending, skipped!.media_skip_reason, skipped!.media?.size],
        ["voice", false, "the file could not be downloaded: media download failed: media expired", null]
      )
      assert.isTrue(Option.isNone(yield* gateway.blobs.head(`media/${acme.accountId}/${id}/${skipped!.id}`)))
      // The hanging download is still just pending, and the downloads asked were one per file.
      assert.strictEqual((yield* byWaId("3A0100"))!.media_pending, true)
      assert.deepStrictEqual(fake.downloads, ["3A0100", "3A0102", "3A0103"])
    }))
})

describe("incoming messages without content of their own, on the Baileys driver", () => {
  const undecryptable = (text: string) => Number(/^wagate_undecryptable_messages (\d+)$/m.exec(text)?.[1] ?? 0)

  it.scopedLive("a view-once message is kept as a placeholder and announced; one not decrypted is counted, not stored; an album's announcement is neither", () =>
    Effect.gen(function*() {
      const { acme, api, fake, gateway } = yield* workingNumber
      const before = undecryptable(yield* gateway.ops.ops.metrics())
      const peer = uniquePhone()
      const viewOnce = fileFrom(peer, "3A0V01", undefined)
      fake.latest().upsert([
        // Baileys 7.0.0-rc14 for `<unavailable type="view_once"/>`: the key marked, no content, no stub.
        { ...viewOnce, key: { ...viewOnce.key, isViewOnce: true } },
        // Not decrypted (a CIPHERTEXT stub): WhatsApp delivers it again with its content when it can.
        {
          ...fileFrom(peer, "3A0V02", undefined),
          messageStubType: proto.WebMessageInfo.StubType.CIPHERTEXT,
          messageStubParameters: ["Bad MAC"]
        },
        // An album: its announcement, then its photo as a message of its own.
        fileFrom(peer, "3A0V03", { albumMessage: { expectedImageCount: 1 } }),
        fileFrom(peer, "3A0V04", { associatedChildMessage: { message: { imageMessage: { mimetype: "image/jpeg", caption: "one" } } } })
      ])
      const page = yield* eventually(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.length === 2)
      assert.deepStrictEqual(
        page.messages.map((m) => [m.wa_message_id, m.type, m.text]).sort(),
        [["3A0V01", "unknown", "View-once message: it can be opened only on the phone"], ["3A0V04", "image", "one"]]
      )
      const announced = yield* query<{ id: string; type: string; text: string }>(gateway.database, (sql) =>
        sql`SELECT payload->'data'->>'id' AS id, payload->'data'->>'type' AS type, payload->'data'->>'text' AS text
            FROM webhook_outbox WHERE event = 'message' AND account_id = ${acme.accountId} ORDER BY id`)
      assert.deepStrictEqual(announced.map((e) => [e.id, e.type, e.text]), [
        ["3A0V01", "unknown", "View-once message: it can be opened only on the phone"],
        ["3A0V04", "image", "one"]
      ])
      assert.strictEqual(undecryptable(yield* gateway.ops.ops.metrics()), before + 1)
    }))
})

describe("group chats on the Baileys driver", () => {
  it.scopedLive("a group chat is named by the group's subject, never by the member who wrote", () =>
    Effect.gen(function*() {
      const { api, fake } = yield* workingNumber
      const group = "120363000000000001@g.us"
      fake.latest().groups.set(group, { id: group, subject: "Shop staff", owner: undefined, participants: [] })
      const member = (id: string, name: string): WAMessage => ({
        ...textFrom(group, id, `hi from ${name}`),
        key: { remoteJid: group, participant: `${uniquePhone()}@s.whatsapp.net`, id, fromMe: false },
        pushName: name
      })
      fake.latest().upsert([member("3A0G01", "Ali"), member("3A0G02", "Dana")])
      const chats = yield* eventually(api.chats.list({ urlParams: {} }), (l) => l.chats.some((c) => c.message_count === 2))
      assert.deepStrictEqual(chats.chats.map((c) => [c.chat_id, c.name, c.group_subject]), [
        ["120363000000000001@g.us", "Shop staff", "Shop staff"]
      ])
    }))
})

describe("operator metrics", () => {
  const zombieRestarts = (text: string) => metricValue(text, "wagate_zombie_restarts")

  it.scopedLive("a watchdog restart is counted in wagate_zombie_restarts on GET /ops/v1/metrics (Prometheus text, operator token)", () =>
    Effect.gen(function*() {
      const { fake, gateway, id } = yield* workingNumberWith({ watchdogIntervalMs: 50 })
      const metrics = gateway.http.get("/ops/v1/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      const before = zombieRestarts(yield* Effect.flatMap(metrics, (r) => r.text))

      // The socket died without a close event: the connection still says WORKING.
      const sockets = fake.sockets.length
      fake.latest().wire.isOpen = false
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === sockets + 1)
      fake.latest().open()
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")

      const response = yield* metrics
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
      const text = yield* response.text
      assert.strictEqual(zombieRestarts(text), before + 1)
      assert.match(text, /^# TYPE wagate_zombie_restarts counter$/m)
      assert.match(text, /^# HELP wagate_zombie_restarts .+$/m)
      // The typed operator client reads the same text.
      assert.strictEqual(zombieRestarts(yield* gateway.ops.ops.metrics()), before + 1)

      // Operators only.
      const anonymous = yield* gateway.http.get("/ops/v1/metrics")
      assert.deepStrictEqual([anonymous.status, ((yield* anonymous.json) as { code: string }).code], [401, "unauthorized"])
      const wrong = yield* gateway.http.get("/ops/v1/metrics", { headers: { authorization: "Bearer wag_op_wrong" } })
      assert.deepStrictEqual([wrong.status, ((yield* wrong.json) as { code: string }).code], [401, "invalid_key"])
    }))
})

describe("people WhatsApp names only by a LID, on the Baileys driver", () => {
  it.scopedLive("stored without a phone under chat <lid>@lid, answered there; once the phone is learned the two chats are one", () =>
    Effect.gen(function*() {
      const { acme, api, fake, gateway, id } = yield* workingNumber
      const lid = `${Date.now()}${Math.floor(Math.random() * 1000)}`.slice(0, 15)
      const lidChat = `${lid}@lid`
      const peer = uniquePhone()
      // One message a second per number: a send that comes too soon waits for its turn.
      const send = (to: string, text: string) =>
        api.messages.send({ payload: { to, text } }).pipe(
          Effect.retry({ while: (e) => e._tag === "RateLimited", schedule: Schedule.spaced("250 millis") })
        )

      // A message from a person known only by a LID: no phone anywhere, chat <lid>@lid.
      fake.latest().upsert([{
        key: { remoteJid: lidChat, id: "3A0L01", fromMe: false },
        message: { conversation: "Do you deliver?" },
        messageTimestamp: Math.floor(Date.now() / 1000),
        pushName: "Dana"
      }])
      const first = yield* eventually(api.messages.list({ urlParams: { chat: lidChat } }), (p) => p.messages.length === 1)
      assert.deepStrictEqual(
        [first.messages[0]!.peer, first.messages[0]!.peer_lid, first.messages[0]!.chat_id],
        ["", lidChat, lidChat]
      )
      const [hook] = yield* query<{ from: string; chat_id: string }>(gateway.database, (sql) =>
        sql`SELECT payload->'data'->>'from' AS "from", payload->'data'->>'chat_id' AS chat_id FROM webhook_outbox
            WHERE event = 'message' AND account_id = ${acme.accountId} AND payload->'data'->>'id' = '3A0L01'`)
      assert.deepStrictEqual(hook, { from: "", chat_id: lidChat })
      const contacts = yield* query<{ phone: string | null; lid: string }>(gateway.database, (sql) =>
        sql`SELECT phone, lid FROM contacts WHERE number_id = ${id}`)
      assert.deepStrictEqual(contacts, [{ phone: null, lid: lidChat }])

      // The reply goes to the LID, as a known contact (the person wrote first).
      const reply = yield* send(lidChat, "Yes, tomorrow")
      assert.strictEqual(fake.latest().sent.at(-1)?.jid, lidChat)
      const replied = yield* eventually(api.messages.list({ urlParams: { chat: lidChat } }), (p) => p.messages.length === 2)
      assert.deepStrictEqual(
        replied.messages.map((m) => [m.direction, m.peer, m.chat_id, m.status]),
        [["out", "", lidChat, "sent"], ["in", "", lidChat, "received"]]
      )
      assert.strictEqual(replied.messages[0]!.id, reply.id)
      const [out] = yield* query<{ first_contact: boolean }>(gateway.database, (sql) =>
        sql`SELECT first_contact FROM messages WHERE id = ${reply.id}`)
      assert.strictEqual(out!.first_contact, false)

      // The phone was already in a chat of its own (the number wrote to it before).
      yield* send(peer, "Your order is ready")

      // WhatsApp reveals the mapping: one chat <phone>@c.us with all four messages, one contact.
      fake.latest().emit("lid-mapping.update", { lid: lidChat, pn: `${peer}@s.whatsapp.net` })
      const chats = yield* eventually(
        api.chats.list({ urlParams: {} }),
        (c) => c.chats.every((chat) => chat.chat_id !== lidChat)
      )
      const chat = chats.chats.find((c) => c.chat_id === `${peer}@c.us`)
      assert.deepStrictEqual(
        [chat?.peer, chat?.peer_lid, chat?.message_count, chats.chats.length],
        [peer, lidChat, 3, 1]
      )
      const merged = yield* api.messages.list({ urlParams: { chat: peer } })
      assert.deepStrictEqual(merged.messages.map((m) => [m.peer, m.chat_id]), [
        [peer, `${peer}@c.us`],
        [peer, `${peer}@c.us`],
        [peer, `${peer}@c.us`]
      ])
      const after = yield* query<{ phone: string | null; lid: string | null; wrote_first: boolean }>(gateway.database, (sql) =>
        sql`SELECT phone, lid, wrote_first FROM contacts WHERE number_id = ${id}`)
      // The person wrote first through the LID, before the number wrote to the phone.
      assert.deepStrictEqual(after, [{ phone: peer, lid: lidChat, wrote_first: true }])

      // Later messages from the LID land in the phone's chat; a reply to the LID goes to the phone.
      fake.latest().upsert([{
        key: { remoteJid: lidChat, id: "3A0L02", fromMe: false },
        message: { conversation: "Thanks" },
        messageTimestamp: Math.floor(Date.now() / 1000),
        pushName: "Dana"
      }])
      yield* eventually(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.length === 4)
      yield* send(lidChat, "You're welcome")
      assert.strictEqual(fake.latest().sent.at(-1)?.jid, `${peer}@s.whatsapp.net`)
      const final = yield* api.messages.list({ urlParams: { chat: peer } })
      assert.deepStrictEqual([final.messages.length, final.messages[0]!.peer], [5, peer])
    }))
})

describe("messages the network did not take, on the Baileys driver", () => {
  it.scopedLive("re-sent under the same id on each reconnect, at most 5 times, then failed alone; the messages behind it go out", () =>
    Effect.gen(function*() {
      const { acme, api, fake, gateway, id } = yield* workingNumber
      const stuck = uniquePhone()
      const other = uniquePhone()
      const send = (to: string, text: string) =>
        api.messages.send({ payload: { to, text } }).pipe(
          Effect.retry({ while: (e) => e._tag === "RateLimited", schedule: Schedule.spaced("250 millis") })
        )
      const row = (id: number) =>
        Effect.map(
          query<{ status: string; send_attempts: number; error: string | null }>(gateway.database, (sql) =>
            sql`SELECT status, send_attempts, error FROM messages WHERE id = ${id}`),
          (rows) => rows[0]!
        )

      // The connection drops under both sends (Baileys' Boom "Connection Closed"): both stay pending.
      const closed = () => ({ _tag: "fail" as const, error: Object.assign(new Error("Connection Closed"), { output: { statusCode: 428 } }) })
      let otherDown = true
      const install = () => {
        fake.latest().sendOutcome = (jid) =>
          jid === `${stuck}@s.whatsapp.net` || (otherDown && jid === `${other}@s.whatsapp.net`) ? closed() : null
      }
      install()
      const first = yield* send(stuck, "first")
      const second = yield* send(other, "second")
      assert.deepStrictEqual([(yield* row(first.id)).status, (yield* row(second.id)).status], ["pending", "pending"])
      otherDown = false

      // Each reconnect hands the pending messages to WhatsApp again, under the ids they were recorded with.
      for (let n = 1; n <= 5; n++) {
        const sockets = fake.sockets.length
        fake.latest().close(428)
        yield* eventually(Effect.sync(() => fake.sockets.length), (k) => k === sockets + 1)
        install()
        fake.latest().open()
        yield* eventually(row(first.id), (r) => r.send_attempts === n)
        if (n === 1) {
          // The one behind it is not held up: it went out on the first reconnect.
          yield* eventually(row(second.id), (r) => r.status === "sent")
          assert.deepStrictEqual(
            fake.latest().sent.map((s) => [s.jid, s.options?.messageId]),
            [[`${stuck}@s.whatsapp.net`, first.wa_message_id], [`${other}@s.whatsapp.net`, second.wa_message_id]]
          )
        }
      }
      const failed = yield* eventually(row(first.id), (r) => r.status === "failed")
      assert.match(failed.error ?? "", /^not taken by the network after 5 attempts: the connection dropped during the send: Connection Closed/)
      assert.strictEqual((yield* row(second.id)).send_attempts, 1)
      const acks = yield* query<{ id: string; ack: string }>(gateway.database, (sql) =>
        sql`SELECT payload->'data'->>'id' AS id, payload->'data'->>'ack' AS ack FROM webhook_outbox
            WHERE event = 'message.ack' AND account_id = ${acme.accountId} AND payload->'data'->>'id' = ${first.wa_message_id}`)
      assert.deepStrictEqual(acks.map((a) => a.ack), ["failed"])

      // A sixth reconnect sends it no more: the next socket carries only a new message.
      const sockets = fake.sockets.length
      fake.latest().close(428)
      yield* eventually(Effect.sync(() => fake.sockets.length), (k) => k === sockets + 1)
      fake.latest().open()
      yield* eventually(api.numbers.connection({ path: { id } }), (c) => c.status === "WORKING")
      const third = yield* send(other, "third")
      yield* eventually(row(third.id), (r) => r.status === "sent")
      assert.deepStrictEqual(fake.latest().sent.map((s) => s.options?.messageId), [third.wa_message_id])
    }))
})

describe("phones without WhatsApp, on the Baileys driver", () => {
  it.scopedLive("a first message to one is accepted, then failed 'the recipient is not on WhatsApp' with its ack webhook, as on the simulator; a known contact is not asked about", () =>
    Effect.gen(function*() {
      const { acme, api, fake, gateway } = yield* workingNumber
      const socket = fake.latest()
      const nowhere = uniquePhone()
      const customer = uniquePhone()
      socket.withoutWhatsApp.add(nowhere)
      // One message a second per number: a send that comes too soon waits for its turn.
      const send = (to: string, text: string) =>
        api.messages.send({ payload: { to, text } }).pipe(
          Effect.retry({ while: (e) => e._tag === "RateLimited", schedule: Schedule.spaced("250 millis") })
        )
      const acks = (waId: string) =>
        query<{ ack: string; error: string | null }>(gateway.database, (sql) =>
          sql`SELECT payload->'data'->>'ack' AS ack, payload->'data'->>'error' AS error FROM webhook_outbox
              WHERE event = 'message.ack' AND account_id = ${acme.accountId} AND payload->'data'->>'id' = ${waId}
              ORDER BY id`)

      // WhatsApp would take it and ack it as sent, and it would stay sent: the driver asks first.
      const lost = yield* send(nowhere, "Your order is ready")
      const failed = yield* eventually(api.messages.get({ path: { id: lost.id } }), (m) => m.status === "failed")
      assert.strictEqual(failed.error, "the recipient is not on WhatsApp")
      const hooks = yield* eventually(acks(lost.wa_message_id), (rows) => rows.some((r) => r.ack === "failed"))
      assert.deepStrictEqual(hooks.at(-1), { ack: "failed", error: "the recipient is not on WhatsApp" })
      assert.deepStrictEqual(socket.sent, [])
      assert.deepStrictEqual(socket.checks, [[nowhere]])

      // A person who wrote first is a known contact: the reply goes out unasked.
      socket.upsert([textFrom(customer, "3A0N01", "Is the shop open?")])
      yield* eventually(api.messages.list({ urlParams: { chat: customer } }), (p) => p.messages.length === 1)
      const reply = yield* send(customer, "Yes, until 8")
      yield* eventually(api.messages.get({ path: { id: reply.id } }), (m) => m.status === "sent")
      assert.deepStrictEqual(socket.sent.map((s) => s.jid), [`${customer}@s.whatsapp.net`])
      assert.deepStrictEqual(socket.checks, [[nowhere]])
    }))
})

describe("phones WhatsApp knows by other digits, on the Baileys driver", () => {
  it.scopedLive("a Brazilian mobile written with its ninth digit goes to the JID WhatsApp answered; the reply and later sends are one chat", () =>
    Effect.gen(function*() {
      const { api, fake, gateway, id } = yield* workingNumber
      const socket = fake.latest()
      const tail = uniquePhone().slice(-8)
      const given = `55119${tail}`
      const known = `5511${tail}`
      socket.onWhatsAppOutcome = (phone) =>
        ({ _tag: "ok", value: [{ jid: `${phone === given ? known : phone}@s.whatsapp.net`, exists: true }] })
      const send = (to: string, text: string) =>
        api.messages.send({ payload: { to, text } }).pipe(
          Effect.retry({ while: (e) => e._tag === "RateLimited", schedule: Schedule.spaced("250 millis") })
        )

      const first = yield* send(given, "Olá! Seu pedido está pronto")
      assert.deepStrictEqual(socket.sent.map((s) => s.jid), [`${known}@s.whatsapp.net`])
      // The message is the conversation's of the phone WhatsApp knows.
      const moved = yield* eventually(api.messages.get({ path: { id: first.id } }), (m) => m.chat_id === `${known}@c.us`)
      assert.deepStrictEqual([moved.peer, moved.status], [known, "sent"])
      // Its `sent` webhook names that phone too, as GET /messages does.
      const sentHooks = yield* query<{ to: string }>(gateway.database, (sql) =>
        sql`SELECT payload->'data'->>'to' AS to FROM webhook_outbox
            WHERE event = 'message.ack' AND payload->'data'->>'id' = ${first.wa_message_id} AND payload->'data'->>'ack' = 'sent'`)
      assert.deepStrictEqual(sentHooks, [{ to: known }])

      // The reply comes from that JID: the same chat.
      socket.upsert([textFrom(known, "3A0BR01", "Obrigada!")])
      const chat = yield* eventually(api.messages.list({ urlParams: { chat: known } }), (p) => p.messages.length === 2)
      assert.deepStrictEqual(chat.messages.map((m) => [m.direction, m.chat_id]), [["in", `${known}@c.us`], ["out", `${known}@c.us`]])

      // A later send to the digits given: the same chat, a known contact (not asked about again).
      const second = yield* send(given, "Até logo")
      assert.deepStrictEqual(socket.sent.map((s) => s.jid), [`${known}@s.whatsapp.net`, `${known}@s.whatsapp.net`])
      assert.deepStrictEqual(socket.checks, [[given]])
      const again = yield* api.messages.get({ path: { id: second.id } })
      assert.deepStrictEqual([again.chat_id, again.peer], [`${known}@c.us`, known])
      const chats = yield* api.chats.list({ urlParams: {} })
      assert.deepStrictEqual(chats.chats.map((c) => [c.chat_id, c.message_count]), [[`${known}@c.us`, 3]])
      // Listed by the digits the client sent to: the same conversation.
      const byGiven = yield* api.messages.list({ urlParams: { chat: given } })
      assert.deepStrictEqual(byGiven.messages.map((m) => m.id), (yield* api.messages.list({ urlParams: { chat: known } })).messages.map((m) => m.id))
      assert.strictEqual(byGiven.messages.length, 3)
      // An export of the chat named by the digits given holds that conversation too.
      const exported = yield* api.exports.create({ payload: { chat: given, include_media: false } })
      const done = yield* eventually(api.exports.get({ path: { id: exported.id } }), (e) => e.status === "done" || e.status === "failed", 60_000)
      assert.deepStrictEqual([done.status, done.messages], ["done", 3])
      const rows = yield* query<{ phone: string; first_contact: boolean }>(gateway.database, (sql) =>
        sql`SELECT c.phone, m.first_contact FROM contacts c JOIN messages m ON m.number_id = c.number_id AND m.id = ${second.id}
            WHERE c.number_id = ${id}`)
      assert.deepStrictEqual(rows, [{ phone: known, first_contact: false }])
    }))
})

describe("phones WhatsApp knows by other digits: the first message's sent webhook", () => {
  it.scopedLive("names the phone WhatsApp knows, also when the merge waits for the number's section (held by another send)", () =>
    Effect.gen(function*() {
      const first = "Olá! Seu pedido está pronto"
      const [recorded, handOver, holding, release] = yield* Effect.all([
        Deferred.make<void>(),
        Deferred.make<void>(),
        Deferred.make<void>(),
        Deferred.make<void>()
      ])
      const { api, fake, gateway } = yield* workingNumberWith({}, undefined, {
        // Another send holds the number's section while the first one is handed over.
        onSend: ({ text }) => text === "hold" ? Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(release)) : Effect.void,
        afterRecord: ({ text }) => text === first ? Effect.zipRight(Deferred.succeed(recorded, undefined), Deferred.await(handOver)) : Effect.void
      })
      const socket = fake.latest()
      const tail = uniquePhone().slice(-8)
      const given = `55119${tail}`
      const known = `5511${tail}`
      socket.onWhatsAppOutcome = (phone) =>
        ({ _tag: "ok", value: [{ jid: `${phone === given ? known : phone}@s.whatsapp.net`, exists: true }] })

      const sending = yield* Effect.fork(api.messages.send({ payload: { to: given, text: first } }))
      yield* Deferred.await(recorded)
      const other = yield* Effect.fork(Effect.either(api.messages.send({ payload: { to: uniquePhone(), text: "hold" } })))
      yield* Deferred.await(holding)
      yield* Deferred.succeed(handOver, undefined)
      yield* eventually(Effect.sync(() => socket.sent.length), (n) => n === 1)
      assert.deepStrictEqual(socket.sent.map((s) => s.jid), [`${known}@s.whatsapp.net`])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(other)
      const sent = yield* Fiber.join(sending)

      const message = yield* eventually(api.messages.get({ path: { id: sent.id } }), (m) => m.chat_id === `${known}@c.us` && m.status === "sent")
      assert.strictEqual(message.peer, known)
      const hooks = yield* eventually(
        query<{ to: string; ack: string }>(gateway.database, (sql) =>
          sql`SELECT payload->'data'->>'to' AS to, payload->'data'->>'ack' AS ack FROM webhook_outbox
              WHERE event = 'message.ack' AND payload->'data'->>'id' = ${sent.wa_message_id}`),
        (rows) => rows.length === 1
      )
      assert.deepStrictEqual(hooks, [{ to: known, ack: "sent" }])
    }), 60_000)
})

describe("phones WhatsApp knows by other digits: a file sent with the first message", () => {
  it.scopedLive("is kept in the chat of the phone WhatsApp answered, where the message is", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const { api, fake, gateway } = yield* workingNumber
      const tail = uniquePhone().slice(-8)
      const given = `55219${tail}`
      const known = `5521${tail}`
      fake.latest().onWhatsAppOutcome = (phone) =>
        ({ _tag: "ok", value: [{ jid: `${phone === given ? known : phone}@s.whatsapp.net`, exists: true }] })
      const sent = yield* api.messages.send({ payload: { to: given, image: { url: files.url("/image.png") } } as never })
      assert.deepStrictEqual(fake.latest().sent.map((s) => s.jid), [`${known}@s.whatsapp.net`])
      yield* eventually(api.messages.get({ path: { id: sent.id } }), (m) => m.chat_id === `${known}@c.us`)
      const kept = yield* eventually(
        query<{ chat_id: string }>(gateway.database, (sql) => sql`SELECT chat_id FROM media_files WHERE message_id = ${sent.id}`),
        (rows) => rows.length === 1
      )
      assert.deepStrictEqual(kept, [{ chat_id: `${known}@c.us` }])
    }))
})

describe("what WhatsApp answered about a phone, after a restart", () => {
  it.scopedLive("a contact without WhatsApp is still failed without a send, and digits WhatsApp knows by another form still go to that phone's chat, neither asked again", () =>
    Effect.gen(function*() {
      const { acme, database, fake, gateway, id, restart } = yield* beforeRestart({})
      const nowhere = uniquePhone()
      const tail = uniquePhone().slice(-8)
      const given = `52155${tail}`
      const known = `5255${tail}`
      const answering = (socket: FakeSocket.FakeSocket) => {
        socket.withoutWhatsApp.add(nowhere)
        socket.onWhatsAppOutcome = (phone) =>
          socket.withoutWhatsApp.has(phone)
            ? { _tag: "ok", value: [] }
            : { _tag: "ok", value: [{ jid: `${phone === given ? known : phone}@s.whatsapp.net`, exists: true }] }
      }
      const sending = (api: Effect.Effect.Success<typeof workingNumber>["api"]) =>
        (to: string, text: string) =>
          api.messages.send({ payload: { to, text } }).pipe(
            Effect.retry({ while: (e) => e._tag === "RateLimited", schedule: Schedule.spaced("250 millis") })
          )
      answering(fake.latest())
      const key = (yield* gateway.ops.ops.issueKey({ payload: { account_id: acme.accountId } })).key
      const before = sending(yield* gateway.client(key))
      yield* before(nowhere, "Your order is ready")
      yield* before(given, "Su pedido está listo")
      assert.deepStrictEqual(fake.latest().checks, [[nowhere], [given]])
      yield* eventually(
        query<{ n: string }>(database, (sql) => sql`SELECT count(*) AS n FROM chats WHERE chat_id = ${`${given}@c.us`}`),
        (rows) => Number(rows[0]!.n) === 0
      )
      yield* restart

      const again = yield* baileysGatewayWith({}, database)
      yield* eventually(Effect.sync(() => again.fake.sockets.length), (n) => n === 1)
      const socket = again.fake.latest()
      socket.open()
      yield* eventually(again.gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")
      answering(socket)
      const api = yield* again.gateway.client(key)
      const send = sending(api)

      const lost = yield* send(nowhere, "Are you there?")
      const failed = yield* eventually(api.messages.get({ path: { id: lost.id } }), (m) => m.status === "failed")
      assert.strictEqual(failed.error, "the recipient is not on WhatsApp")
      const later = yield* send(given, "¿Lo recogerá hoy?")
      const moved = yield* eventually(api.messages.get({ path: { id: later.id } }), (m) => m.status === "sent")
      assert.deepStrictEqual([moved.chat_id, moved.peer], [`${known}@c.us`, known])
      assert.deepStrictEqual(socket.sent.map((s) => s.jid), [`${known}@s.whatsapp.net`])
      assert.deepStrictEqual(socket.checks, [])
    }), 60_000)
})

describe("operator unlink and relink on the Baileys driver", () => {
  it.scopedLive("unlink removes the device from the phone and deletes its credentials; relink after a 411 links a new device", () =>
    Effect.gen(function*() {
      const { fake, gateway, id } = yield* workingNumber
      const credentials = query<{ n: string }>(gateway.database, (sql) =>
        sql`SELECT count(*) AS n FROM wa_auth_state WHERE number_id = ${id}`)

      const unlinked = yield* gateway.ops.ops.unlink({ path: { id } })
      assert.deepStrictEqual([unlinked.status, unlinked.reason], ["STOPPED", "logged out"])
      assert.strictEqual(fake.latest().loggedOut, 1)
      assert.strictEqual(Number((yield* credentials)[0]!.n), 0)

      // Linked again, then WhatsApp says the device no longer matches (411): FAILED with credentials kept.
      yield* answering(fake, gateway.ops.ops.link({ path: { id }, payload: {} }), (socket) => socket.qr("2@ref-again"))
      fake.latest().pairSuccess(uniquePhone())
      const scanned = fake.sockets.length
      fake.latest().close(515)
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === scanned + 1)
      fake.latest().open()
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")
      fake.latest().close(411)
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")

      // Relink: the old device is removed through a connection of its own, then a new link starts.
      const sockets = fake.sockets.length
      const relinked = yield* Effect.fork(gateway.ops.ops.relink({ path: { id }, payload: { method: "qr" } }))
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === sockets + 1)
      fake.latest().open()
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === sockets + 2)
      assert.strictEqual(fake.sockets[sockets]!.loggedOut, 1)
      assert.isUndefined(fake.latest().options.auth.creds.account)
      fake.latest().qr("2@ref-new-device")
      const link = yield* Fiber.join(relinked)
      assert.deepStrictEqual([link.status, link.qr], ["SCAN_QR_CODE", "2@ref-new-device"])
    }), 60_000)
})

describe("credentials WhatsApp refused, on the Baileys driver", () => {
  /** Links by QR; the answer once the new socket showed `qr`. */
  const linkShowing = (gateway: RunningGateway, fake: FakeSocket.FakeFactory, id: number, qr: string) =>
    answering(fake, gateway.ops.ops.link({ path: { id }, payload: { method: "qr" } }), (socket) => socket.qr(qr))

  it.scopedLive("logged out from the phone (401), then a restart: a link shows a QR for a new device at once", () =>
    Effect.gen(function*() {
      const { database, fake, gateway, id, restart } = yield* beforeRestart({ backoffMaxMs: 300_000 })
      fake.latest().closeWith(FakeSocket.Closes.failure(401, { location: "rva" }))
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "STOPPED")
      yield* restart

      const again = yield* baileysGatewayWith({ backoffMaxMs: 300_000 }, database)
      const link = yield* linkShowing(again.gateway, again.fake, id, "2@ref-new-device")
      assert.deepStrictEqual([link.status, link.qr], ["SCAN_QR_CODE", "2@ref-new-device"])
      // Never a socket with the credentials WhatsApp refused: the link made a new device.
      assert.deepStrictEqual(again.fake.sockets.map((s) => s.options.auth.creds.account), [undefined])
    }), 60_000)

  it.scopedLive("a 401 on an idle number: the one more try comes after the wait even across a restart; WORKING again", () =>
    Effect.gen(function*() {
      const { database, fake, gateway, id, restart } = yield* beforeRestart({ backoffMaxMs: 2_000 })
      fake.latest().closeWith(FakeSocket.Closes.failure(401))
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "STOPPED")
      yield* restart

      // Nobody asks for the number: the try is the gateway's own, with the device kept.
      const again = yield* baileysGatewayWith({ backoffMaxMs: 2_000 }, database)
      yield* eventually(Effect.sync(() => again.fake.sockets.length), (n) => n === 1)
      assert.isDefined(again.fake.latest().options.auth.creds.account)
      again.fake.latest().open()
      const working = yield* eventually(again.gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")
      assert.isNull(working.qr)
    }), 60_000)

  /**
   * Each way WhatsApp refuses an account: the close, the reason the number is FAILED with (read
   * off it when it carries the time of the close), and what a link answers with that reason.
   */
  const refusals = [
    {
      what: "refused by WhatsApp (403): the account may be banned",
      close: FakeSocket.Closes.failure(403),
      expect: (reason: string | null) => assert.strictEqual(reason, "refused by WhatsApp (403): the account may be banned"),
      link: Linking.refusedLink
    },
    {
      what: "banned by WhatsApp (406)",
      close: FakeSocket.Closes.failure(406),
      expect: (reason: string | null) => assert.strictEqual(reason, "banned by WhatsApp (406)"),
      link: Linking.refusedLink
    },
    {
      what: "a temporary ban (402), until its end",
      // Two hours, in seconds, as WhatsApp gives it.
      close: FakeSocket.Closes.failure(402, { code: "101", expire: "7200" }),
      expect: (reason: string | null, closedAt: number) => {
        const [, end, why] = (reason ?? "").match(/^temporarily banned by WhatsApp \(402\) until (\S+); WhatsApp's reason: (.*)$/) ?? []
        assert.strictEqual(why, "too many messages to people who do not have the number in their contacts (101)", reason ?? "")
        const until = Date.parse(end ?? "")
        assert.isAtLeast(until, closedAt + 7_200_000, reason ?? "")
        assert.isAtMost(until, Date.now() + 7_200_000, reason ?? "")
      },
      link: Linking.bannedLink
    }
  ]

  for (const refusal of refusals) {
    it.scopedLive(`${refusal.what}: FAILED with the reason; after a restart no socket, and a link says why it does not connect`, () =>
      Effect.gen(function*() {
        const { api, database, fake, gateway, id, restart } = yield* beforeRestart({})
        const closedAt = Date.now()
        fake.latest().closeWith(refusal.close)
        const failed = yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")
        refusal.expect(failed.reason, closedAt)
        const reason = failed.reason ?? ""
        const numbers = yield* api.numbers.list()
        assert.deepStrictEqual(numbers.numbers.map((n) => [n.id, n.status]), [[id, "FAILED"]])
        yield* restart

        const again = yield* baileysGatewayWith({}, database)
        const woken = yield* eventually(again.gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")
        assert.strictEqual(woken.reason, reason)
        // (That it answers at once, not after the 5 s a link waits for an attempt to begin, is
        // the driver's LinkRefused: Connection.test.ts, on the test clock, with a ban's end.)
        const link = yield* again.gateway.ops.ops.link({ path: { id }, payload: { method: "qr" } })
        assert.deepStrictEqual([link.status, link.reason], ["FAILED", refusal.link(reason)])
        // Never a socket: neither with the refused account nor for a new device of it.
        assert.strictEqual(again.fake.sockets.length, 0)
        const events = yield* sessionEvents(database, id)
        assert.deepStrictEqual(events.at(-1), { status: "FAILED", reason: refusal.link(reason) })
      }), 60_000)
  }

  it.scopedLive("a bad user agent (409), after one try with the current version: FAILED saying what to do; a restart connects once more", () =>
    Effect.gen(function*() {
      const { database, fake, gateway, id, restart } = yield* beforeRestart({})
      fake.latest().closeWith(FakeSocket.Closes.failure(409))
      yield* eventually(Effect.sync(() => fake.sockets.length), (n) => n === 3)
      fake.latest().closeWith(FakeSocket.Closes.failure(409))
      const failed = yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")
      assert.strictEqual(
        failed.reason,
        "WhatsApp refused the client's user agent (409) even after fetching the current version: " +
          "set WA_VERSION or update the gateway, then link the number (its credentials are kept)"
      )
      assert.strictEqual(fake.sockets.length, 3)
      yield* restart

      // Not stored: the credentials are fine, and the version may be another now.
      const again = yield* baileysGatewayWith({}, database)
      yield* eventually(Effect.sync(() => again.fake.sockets.length), (n) => n === 1)
      assert.isDefined(again.fake.latest().options.auth.creds.account)
      again.fake.latest().open()
      yield* eventually(again.gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "WORKING")
    }), 60_000)

  it.scopedLive("multi-device mismatch (411): a link shows a QR for a new device at once", () =>
    Effect.gen(function*() {
      const { fake, gateway, id } = yield* workingNumber
      fake.latest().close(411)
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")
      const link = yield* linkShowing(gateway, fake, id, "2@ref-after-411")
      assert.deepStrictEqual([link.status, link.qr], ["SCAN_QR_CODE", "2@ref-after-411"])
      assert.isUndefined(fake.latest().options.auth.creds.account)
    }))

  it.scopedLive("after a 411 and a restart the number is not connected with the refused credentials; a link shows a QR", () =>
    Effect.gen(function*() {
      const { database, fake, gateway, id, restart } = yield* beforeRestart({})
      fake.latest().close(411)
      yield* eventually(gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")
      yield* restart

      const again = yield* baileysGatewayWith({}, database)
      // The number is woken (it is still a linked device) and says why it failed.
      const failed = yield* eventually(again.gateway.ops.ops.linkStatus({ path: { id } }), (l) => l.status === "FAILED")
      assert.strictEqual(failed.reason, "multi-device mismatch (411): link the number again")
      const link = yield* linkShowing(again.gateway, again.fake, id, "2@ref-after-restart")
      assert.deepStrictEqual([link.status, link.qr], ["SCAN_QR_CODE", "2@ref-after-restart"])
      assert.deepStrictEqual(again.fake.sockets.map((s) => s.options.auth.creds.account), [undefined])
    }), 60_000)
})

describe("voice notes on the Baileys driver", () => {
  it.scopedLive("an MP3 sent as a voice note reaches WhatsApp as mono Opus in OGG, push-to-talk", () =>
    Effect.gen(function*() {
      const { api, fake } = yield* workingNumberWith()
      // One second of a tone as a stereo MP3, made with the ffmpeg the install ships.
      const mp3 = spawnSync(VoiceNote.ffmpegPath(), [
        "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-ac", "2", "-f", "mp3", "pipe:1"
      ]).stdout
      assert.strictEqual(mp3.subarray(0, 3).toString(), "ID3")
      const server = createServer((_req, res) => {
        res.writeHead(200, { "content-type": "audio/mpeg", "content-length": String(mp3.length) })
        res.end(mp3)
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/note.mp3`
      const to = uniquePhone()
      const sent = yield* api.messages.send({ payload: { to, voice: { url } } as never })
      const [out] = fake.latest().sent.filter((s) => s.options?.messageId === sent.wa_message_id)
      const content = out!.content as { audio: Buffer; mimetype: string; ptt: boolean }
      assert.deepStrictEqual([out!.jid, content.mimetype, content.ptt], [`${to}@s.whatsapp.net`, "audio/ogg; codecs=opus", true])
      assert.strictEqual(content.audio.subarray(0, 4).toString(), "OggS")
      assert.deepStrictEqual(opusHead(content.audio), { channels: 1, inputRate: 16000 })
      const [stored] = (yield* api.messages.list({ urlParams: { chat: to } })).messages
      assert.deepStrictEqual([stored!.type, stored!.status], ["voice", "sent"])
    }))
})
