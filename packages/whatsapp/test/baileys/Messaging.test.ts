/**
 * Sending through the Baileys driver (the five kinds, under the gateway's own ids), what a
 * failed send means, delivery reports as acks, restrictions, and contact checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Boom } from "@hapi/boom"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { Readable } from "node:stream"
import { DriverUnavailable, fileOf, type OutgoingContent, SendRejected } from "../../src/WhatsAppDriver.js"
import { Closes } from "./support/FakeSocket.js"
import { opusHead, wav } from "./support/Audio.js"
import * as Recorder from "../support/Recorder.js"
import * as Harness from "./support/Harness.js"

const { advance, flush, working } = Harness
const TO = "77017654321"
const media = { open: fileOf(new Uint8Array([7, 7, 7])), size: 3, mimeType: "image/png" }

describe("Baileys driver: sending", () => {
  it.scoped("the five kinds go to the phone's JID under the id the gateway chose", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const contents: Array<OutgoingContent> = [
        { kind: "text", text: "Hello" },
        { kind: "image", media, caption: "Our menu" },
        { kind: "document", media: { ...media, mimeType: "application/pdf" }, filename: "invoice.pdf", caption: "Invoice" },
        // An MP3, WAV or AAC voice note plays on Android only: it goes out as Opus in OGG.
        { kind: "voice", media: { open: fileOf(new Uint8Array(wav())), size: wav().length, mimeType: "audio/wav" } },
        { kind: "video", media: { ...media, mimeType: "video/mp4" } }
      ]
      for (const [i, content] of contents.entries()) {
        yield* session.send({ waMessageId: `3EB0ID${i}`, to: TO, content })
      }
      const sent = h.fake.latest().sent
      assert.deepStrictEqual(sent.map((s) => [s.jid, s.options?.messageId]), [0, 1, 2, 3, 4].map((i) => [`${TO}@s.whatsapp.net`, `3EB0ID${i}`]))
      const bytes = Buffer.from([7, 7, 7])
      const voice = sent[3]!.content as { audio: Buffer }
      assert.deepStrictEqual(sent.map((s) => s.content), [
        { text: "Hello" },
        { image: bytes, mimetype: "image/png", caption: "Our menu" },
        { document: bytes, mimetype: "application/pdf", fileName: "invoice.pdf", caption: "Invoice" },
        { audio: voice.audio, mimetype: "audio/ogg; codecs=opus", ptt: true },
        { video: bytes, mimetype: "video/mp4" }
      ])
      assert.strictEqual(voice.audio.subarray(0, 4).toString(), "OggS")
      assert.deepStrictEqual(opusHead(voice.audio), { channels: 1, inputRate: 16000 })
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a voice note that is not audio is refused with the encoder's reason, before anything goes out", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const refused = yield* Effect.flip(session.send({
        waMessageId: "3EB0BAD",
        to: TO,
        content: { kind: "voice", media: { open: fileOf(new TextEncoder().encode("not a sound at all")), size: 18, mimeType: "audio/mpeg" } }
      }))
      assert.strictEqual(refused._tag, "SendRejected")
      assert.match(refused.reason, /^the voice note could not be converted to Opus: /)
      assert.deepStrictEqual(h.fake.latest().sent, [])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a file that is gone, or breaks off while Baileys reads it, fails the send with the file's own error", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const gone = new SendRejected({ reason: "the attachment is no longer stored" })
      const missing = yield* Effect.flip(session.send({
        waMessageId: "3EB0GONE",
        to: TO,
        content: { kind: "image", media: { ...media, open: Effect.fail(gone) } }
      }))
      const unreadable = new DriverUnavailable({ reason: "the attachment could not be read from the file store" })
      const broken = {
        ...media,
        size: 2000,
        open: Effect.sync(() => ({
          readable: Readable.from((function*() {
            yield Buffer.alloc(1000, 7)
            throw new Error("EIO")
          })()),
          failure: () => unreadable
        }))
      }
      const brokeOff = yield* Effect.flip(session.send({ waMessageId: "3EB0BROKE", to: TO, content: { kind: "document", media: broken, filename: "a.pdf" } }))
      assert.deepStrictEqual(
        [missing, brokeOff].map((e) => [e._tag, e.reason]),
        [["SendRejected", gone.reason], ["DriverUnavailable", unreadable.reason]]
      )
      assert.deepStrictEqual(h.fake.latest().sent, [])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("not connected, the connection dropping under the send, no answer: unavailable (the message stays pending)", () => {
    const h = Harness.make({ sendTimeoutMs: 5_000 })
    return Effect.gen(function*() {
      Harness.storeLinked(h, 1)
      const { session } = yield* Harness.open({ id: 1, linked: true })
      const message = { waMessageId: "3EB0A", to: TO, content: { kind: "text", text: "Hi" } } as const
      const early = yield* Effect.flip(session.send(message))
      assert.deepStrictEqual([early._tag, early.reason], ["DriverUnavailable", "the number is not connected (status STARTING)"])
      h.fake.latest().open()
      yield* flush
      h.fake.latest().sendOutcome = () => ({ _tag: "fail", error: new Boom("Connection Closed", { statusCode: 428 }) })
      const dropped = yield* Effect.flip(session.send(message))
      assert.strictEqual(dropped._tag, "DriverUnavailable")
      h.fake.latest().sendOutcome = () => ({ _tag: "hang" })
      const fiber = yield* Effect.fork(Effect.flip(session.send(message)))
      yield* advance(5_000)
      const silent = yield* fiber
      assert.deepStrictEqual([silent._tag, silent.reason], ["DriverUnavailable", "the connection dropped during the send: no answer within 5000 ms"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a message the network refuses is rejected with its reason (it will not be retried)", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      h.fake.latest().sendOutcome = () => ({ _tag: "fail", error: new Boom("not-acceptable", { statusCode: 406 }) })
      const refused = yield* Effect.flip(session.send({ waMessageId: "3EB0B", to: TO, content: { kind: "text", text: "x" } }))
      assert.deepStrictEqual([refused._tag, refused.reason], ["SendRejected", "not-acceptable (406)"])
    }).pipe(Effect.provide(h.layer))
  })
})

describe("Baileys driver: acks and restrictions", () => {
  it.scoped("messages.update and message-receipt.update become acks of our messages, in order", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      const key = (id: string) => ({ remoteJid: `${TO}@s.whatsapp.net`, id, fromMe: true })
      socket.emit("messages.update", [
        { key: key("3EB0A"), update: { status: 3 } },
        { key: key("3EB0A"), update: { status: 4 } },
        { key: { ...key("IN1"), fromMe: false }, update: { status: 4 } }
      ])
      socket.emit("message-receipt.update", [
        {
          key: { remoteJid: "120363000000000001@g.us", id: "3EB0G", fromMe: true },
          receipt: { userJid: `${TO}@s.whatsapp.net`, receiptTimestamp: 1700000000 }
        }
      ])
      socket.emit("messages.update", [{ key: key("3EB0F"), update: { status: 0, messageStubParameters: ["479"] } }])
      yield* flush
      assert.deepStrictEqual(rec.take(), [
        "0 ack 3EB0A delivered",
        "0 ack 3EB0A read",
        "0 ack 3EB0G delivered",
        "0 ack 3EB0F failed (delivery failed (479))"
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a session that closes hands over the delivery reports it had received before it is gone", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      // Storing the first ack takes a while; the others arrive meanwhile.
      const stored = yield* Deferred.make<void>()
      const rec = Recorder.make({
        handle: (event) => event._tag === "Ack" && event.waMessageId === "3EB0A" ? Deferred.await(stored) : Effect.void
      })
      Harness.storeLinked(h, 1)
      const opened = yield* Harness.open({ id: 1, linked: true }, rec)
      const socket = h.fake.latest()
      socket.open()
      yield* flush
      rec.take()
      const key = (id: string) => ({ remoteJid: `${TO}@s.whatsapp.net`, id, fromMe: true })
      socket.emit("messages.update", [{ key: key("3EB0A"), update: { status: 3 } }])
      socket.emit("message-receipt.update", [
        {
          key: { remoteJid: "120363000000000001@g.us", id: "3EB0G", fromMe: true },
          receipt: { userJid: `${TO}@s.whatsapp.net`, readTimestamp: 1700000000 }
        }
      ])
      socket.emit("messages.update", [{ key: key("3EB0B"), update: { status: 4 } }])
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 ack 3EB0A delivered"])

      // The number's entity stops (its runner stops, or its shard moves) meanwhile.
      const closing = yield* Effect.fork(opened.close)
      yield* flush
      yield* Deferred.succeed(stored, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(rec.take(), ["0 ack 3EB0G read", "0 ack 3EB0B read"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("server error 463: the message fails; WhatsApp is asked for the time lock and the number is restricted only while it is active", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      // A contact without a trusted-contact token: the account is not restricted.
      socket.timelock = { isActive: false }
      socket.emit("messages.update", [{
        key: { remoteJid: `${TO}@s.whatsapp.net`, id: "3EB0R", fromMe: true },
        update: { status: 0, messageStubParameters: ["463"] }
      }])
      yield* flush
      assert.strictEqual(socket.timelockQueries, 1)
      assert.deepStrictEqual(rec.take(), [
        "0 ack 3EB0R failed (refused by WhatsApp: account restricted or no trusted-contact token (463))",
        "0 unrestricted"
      ])
      // Restricted for real: until the end WhatsApp gives.
      const ends = new Date("2026-12-01T10:00:00Z")
      socket.timelock = { isActive: true, timeEnforcementEnds: ends, enforcementType: "BIZ_QUALITY" }
      socket.emit("messages.update", [{
        key: { remoteJid: `${TO}@s.whatsapp.net`, id: "3EB0S", fromMe: true },
        update: { status: 0, messageStubParameters: ["463"] }
      }])
      yield* flush
      assert.strictEqual(socket.timelockQueries, 2)
      assert.deepStrictEqual(rec.events.slice(-2), [
        {
          _tag: "Ack",
          waMessageId: "3EB0S",
          ack: "failed",
          error: "refused by WhatsApp: account restricted or no trusted-contact token (463)"
        },
        { _tag: "Restricted", reason: "WhatsApp restricted the account from reaching out (BIZ_QUALITY)", until: ends.getTime() }
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a reach-out time lock WhatsApp pushes restricts until its end; its lift (isActive false) lifts it", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const ends = new Date("2026-12-01T10:00:00Z")
      h.fake.latest().emit("connection.update", {
        reachoutTimeLock: { isActive: true, timeEnforcementEnds: ends, enforcementType: "BIZ_QUALITY" as any }
      })
      h.fake.latest().emit("connection.update", { reachoutTimeLock: { isActive: false } })
      yield* flush
      assert.deepStrictEqual(rec.events.slice(-2), [{
        _tag: "Restricted",
        reason: "WhatsApp restricted the account from reaching out (BIZ_QUALITY)",
        until: ends.getTime()
      }, { _tag: "Unrestricted" }])
      assert.strictEqual(rec.take().length, 2)
    }).pipe(Effect.provide(h.layer))
  })
})

describe("Baileys driver: sent means WhatsApp's server took it", () => {
  const text = (id: string) => ({ waMessageId: id, to: TO, content: { kind: "text", text: "Hi" } } as const)

  it.scoped("the send succeeds on the server ack of that id, not when it was written to the socket", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const socket = h.fake.latest()
      socket.serverAck = { _tag: "none" }
      const fiber = yield* Effect.fork(session.send(text("3EB0K")))
      yield* flush
      assert.strictEqual(socket.sent.length, 1)
      assert.isNull(fiber.unsafePoll())
      socket.ackFrame("3EB0OTHER", `${TO}@s.whatsapp.net`)
      yield* flush
      assert.isNull(fiber.unsafePoll())
      socket.ackFrame("3EB0K", `${TO}@s.whatsapp.net`)
      yield* flush
      assert.isTrue(Exit.isSuccess(fiber.unsafePoll()!))
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("no server ack when the connection drops: unavailable (connection lost), so it is re-sent under the same id", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      h.fake.latest().serverAck = { _tag: "none" }
      const fiber = yield* Effect.fork(Effect.flip(session.send(text("3EB0L"))))
      yield* flush
      h.fake.latest().closeWith(Closes.keepAliveLost())
      yield* flush
      const lost = yield* fiber
      assert.deepStrictEqual([lost._tag, lost.reason], ["DriverUnavailable", "connection lost before WhatsApp acknowledged the message"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("no server ack in time: unavailable", () => {
    const h = Harness.make({ sendTimeoutMs: 5_000 })
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      h.fake.latest().serverAck = { _tag: "none" }
      const fiber = yield* Effect.fork(Effect.flip(session.send(text("3EB0T"))))
      yield* advance(5_000)
      const late = yield* fiber
      assert.deepStrictEqual([late._tag, late.reason], ["DriverUnavailable", "no server ack from WhatsApp within 5000 ms"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a server ack with an error: rejected with WhatsApp's code", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      h.fake.latest().serverAck = { _tag: "error", code: "479" }
      const refused = yield* Effect.flip(session.send(text("3EB0E")))
      assert.deepStrictEqual([refused._tag, refused.reason], ["SendRejected", "refused by WhatsApp (479)"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("Boom 500 'All encryptions failed' (a broken recipient session) rejects that message; another 500 is the connection", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      h.fake.latest().sendOutcome = () => ({ _tag: "fail", error: new Boom("All encryptions failed", { statusCode: 500 }) })
      const refused = yield* Effect.flip(session.send(text("3EB0X")))
      assert.deepStrictEqual([refused._tag, refused.reason], [
        "SendRejected",
        "WhatsApp could not encrypt the message for the recipient: All encryptions failed (500)"
      ])
      h.fake.latest().sendOutcome = () => ({ _tag: "fail", error: new Boom("Internal Server Error", { statusCode: 500 }) })
      const dropped = yield* Effect.flip(session.send(text("3EB0Y")))
      assert.strictEqual(dropped._tag, "DriverUnavailable")
    }).pipe(Effect.provide(h.layer))
  })
})

describe("Baileys driver: retries across reconnects", () => {
  it.scoped("getMessage answers from the database with the message Baileys built, on a new socket too; the retry counter is one per number", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const first = h.fake.latest()
      yield* session.send({ waMessageId: "3EB0G1", to: TO, content: { kind: "text", text: "Your order is ready" } })
      first.options.msgRetryCounterCache.set("3EB0G1", 1)
      first.closeWith(Closes.keepAliveLost())
      yield* advance(1_000)
      const second = h.fake.latest()
      assert.notStrictEqual(second, first)
      assert.strictEqual(h.backend.sent.size, 1)
      const again = yield* Effect.promise(() =>
        second.options.getMessage({ remoteJid: `${TO}@s.whatsapp.net`, id: "3EB0G1", fromMe: true })
      )
      assert.strictEqual(again?.extendedTextMessage?.text, "Your order is ready")
      assert.isUndefined(yield* Effect.promise(() => second.options.getMessage({ id: "UNKNOWN" })))
      assert.strictEqual(second.options.msgRetryCounterCache, first.options.msgRetryCounterCache)
      assert.strictEqual(second.options.msgRetryCounterCache.get("3EB0G1"), 1)
    }).pipe(Effect.provide(h.layer))
  })
})

describe("Baileys driver: contact checks", () => {
  it.scoped("onWhatsApp answers whether the phone has WhatsApp; chat id in the gateway's form", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const socket = h.fake.latest()
      assert.deepStrictEqual(yield* session.exists(TO), { exists: true, chatId: `${TO}@c.us` })
      socket.onWhatsAppOutcome = (phone) => ({ _tag: "ok", value: [{ jid: `${phone}@s.whatsapp.net`, exists: false }] })
      assert.deepStrictEqual(yield* session.exists("77000000000"), { exists: false, chatId: "77000000000@c.us" })
      // The canonical JID WhatsApp returns is the chat (Brazil: the ninth digit added).
      socket.onWhatsAppOutcome = () => ({ _tag: "ok", value: [{ jid: "5511987654321@s.whatsapp.net", exists: true }] })
      assert.deepStrictEqual(yield* session.exists("551187654321"), { exists: true, chatId: "5511987654321@c.us" })
      socket.onWhatsAppOutcome = () => ({ _tag: "ok", value: undefined })
      assert.deepStrictEqual(yield* session.exists("1"), { exists: false, chatId: "1@c.us" })
      assert.deepStrictEqual(socket.checks, [[TO], ["77000000000"], ["551187654321"], ["1"]])
      socket.onWhatsAppOutcome = () => ({ _tag: "fail", error: new Boom("Timed Out", { statusCode: 408 }) })
      const failed = yield* Effect.flip(session.exists("77000000001"))
      assert.deepStrictEqual([failed._tag, failed.reason], ["DriverUnavailable", "contact check failed: Timed Out"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("answers are kept: a phone on WhatsApp for 30 days, one that is not for 7; the canonical chat kept with it", () => {
    // Weeks pass on the TestClock: the watchdog looks only once a week here.
    const h = Harness.make({ watchdogIntervalMs: 7 * 24 * 3600_000, idleMs: 7 * 24 * 3600_000 })
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const socket = h.fake.latest()
      socket.onWhatsAppOutcome = (phone) =>
        phone === "551187654321"
          ? { _tag: "ok", value: [{ jid: "5511987654321@s.whatsapp.net", exists: true }] }
          : { _tag: "ok", value: [{ jid: `${phone}@s.whatsapp.net`, exists: false }] }
      const both = Effect.all([session.exists("551187654321"), session.exists("77000000000")])
      const expected = [{ exists: true, chatId: "5511987654321@c.us" }, { exists: false, chatId: "77000000000@c.us" }]
      assert.deepStrictEqual(yield* both, expected)
      yield* Harness.advance(6 * 24 * 3600_000)
      assert.deepStrictEqual(yield* both, expected)
      assert.deepStrictEqual(socket.checks, [["551187654321"], ["77000000000"]])
      // Eight days on: the one without WhatsApp is asked again (it may have joined).
      yield* Harness.advance(2 * 24 * 3600_000)
      assert.deepStrictEqual(yield* both, expected)
      assert.deepStrictEqual(socket.checks, [["551187654321"], ["77000000000"], ["77000000000"]])
      // Thirty-one days on: both.
      yield* Harness.advance(23 * 24 * 3600_000)
      assert.deepStrictEqual(yield* both, expected)
      assert.deepStrictEqual(socket.checks.slice(3), [["551187654321"], ["77000000000"]])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a first message to a phone without WhatsApp is not sent: it succeeds, then fails by an ack, as on the simulator", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* working(h)
      const socket = h.fake.latest()
      const nowhere = "77000000009"
      socket.withoutWhatsApp.add(nowhere)
      const text = (waMessageId: string, to: string, firstContact?: boolean) =>
        session.send({ waMessageId, to, content: { kind: "text", text: "Hello" }, firstContact })

      yield* text("3EB0N1", nowhere, true)
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 ack 3EB0N1 failed (the recipient is not on WhatsApp)"])
      assert.deepStrictEqual([socket.sent, socket.checks], [[], [[nowhere]]])
      // Later messages to the person (a contact now) trust the answer kept: not sent, not asked again.
      yield* text("3EB0N2", nowhere)
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 ack 3EB0N2 failed (the recipient is not on WhatsApp)"])
      assert.deepStrictEqual([socket.sent, socket.checks], [[], [[nowhere]]])

      // A phone on WhatsApp is asked about once; a known contact, a LID or a group never.
      yield* text("3EB0Y1", TO, true)
      yield* text("3EB0Y2", TO, true)
      yield* text("3EB0K1", "77000000008")
      yield* text("3EB0L1", "123456789012345@lid", true)
      yield* text("3EB0G1", "120363000000000001@g.us", true)
      assert.deepStrictEqual(socket.sent.map((s) => s.jid), [
        `${TO}@s.whatsapp.net`,
        `${TO}@s.whatsapp.net`,
        "77000000008@s.whatsapp.net",
        "123456789012345@lid",
        "120363000000000001@g.us"
      ])
      assert.deepStrictEqual(socket.checks, [[nowhere], [TO]])
      // The contact check reads the same answers.
      assert.deepStrictEqual(yield* session.exists(nowhere), { exists: false, chatId: `${nowhere}@c.us` })
      assert.strictEqual(socket.checks.length, 2)
      yield* flush
      assert.deepStrictEqual(rec.take(), [])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("WhatsApp knows the phone by other digits (Brazil's ninth digit, Mexico's 521): the message goes to the JID it answered, and the entity is told", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* working(h)
      const socket = h.fake.latest()
      const known = new Map([["5511987654321", "551187654321"], ["5215512345678", "525512345678"]])
      socket.onWhatsAppOutcome = (phone) => ({ _tag: "ok", value: [{ jid: `${known.get(phone) ?? phone}@s.whatsapp.net`, exists: true }] })
      const text = (waMessageId: string, to: string, firstContact?: boolean) =>
        session.send({ waMessageId, to, content: { kind: "text", text: "Olá" }, firstContact })

      yield* text("3EB0BR1", "5511987654321", true)
      yield* text("3EB0MX1", "5215512345678", true)
      // A later message to the digits given (the entity had not resolved them yet) goes there too, unasked.
      yield* text("3EB0BR2", "5511987654321")
      // Digits WhatsApp knows as they are: nothing to tell.
      yield* text("3EB0KZ1", TO, true)
      yield* flush
      assert.deepStrictEqual(socket.sent.map((s) => [s.jid, s.options?.messageId]), [
        ["551187654321@s.whatsapp.net", "3EB0BR1"],
        ["525512345678@s.whatsapp.net", "3EB0MX1"],
        ["551187654321@s.whatsapp.net", "3EB0BR2"],
        [`${TO}@s.whatsapp.net`, "3EB0KZ1"]
      ])
      assert.deepStrictEqual(socket.checks, [["5511987654321"], ["5215512345678"], [TO]])
      assert.deepStrictEqual(rec.take(), [
        "0 phone 5511987654321=551187654321",
        "0 phone 5215512345678=525512345678",
        "0 phone 5511987654321=551187654321"
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("after a restart a known contact's phone that has no WhatsApp is still failed, and not asked again; one on WhatsApp goes out unasked", () => {
    const h = Harness.make()
    const nowhere = "77000000009"
    const text = (session: Harness.Opened["session"], waMessageId: string, to: string, firstContact?: boolean) =>
      session.send({ waMessageId, to, content: { kind: "text", text: "Hello" }, firstContact })
    return Effect.gen(function*() {
      const before = yield* working(h).pipe(Effect.provide(h.layer))
      h.fake.latest().withoutWhatsApp.add(nowhere)
      yield* text(before.session, "3EB0R1", nowhere, true).pipe(Effect.provide(h.layer))
      yield* before.close

      const again = Harness.restarted(h)
      yield* Effect.gen(function*() {
        const { rec, session } = yield* working(again)
        const socket = again.fake.latest()
        // A contact now (its first message was recorded): the kept answer fails it.
        yield* text(session, "3EB0R2", nowhere)
        yield* text(session, "3EB0R3", TO)
        yield* text(session, "3EB0R4", TO)
        yield* flush
        assert.deepStrictEqual(rec.take(), ["0 ack 3EB0R2 failed (the recipient is not on WhatsApp)"])
        assert.deepStrictEqual([socket.sent.map((s) => s.options?.messageId), socket.checks], [["3EB0R3", "3EB0R4"], []])
      }).pipe(Effect.provide(again.layer))
    })
  })

  it.scoped("the check of a first message fails (no answer): the message is sent unchecked, not lost", () => {
    const h = Harness.make({ queryTimeoutMs: 5_000 })
    return Effect.gen(function*() {
      const { rec, session } = yield* working(h)
      const socket = h.fake.latest()
      socket.onWhatsAppOutcome = () => ({ _tag: "hang" })
      const fiber = yield* Effect.fork(session.send({ waMessageId: "3EB0U1", to: TO, content: { kind: "text", text: "Hi" }, firstContact: true }))
      yield* advance(5_000)
      assert.isTrue(Exit.isSuccess(fiber.unsafePoll()!))
      assert.deepStrictEqual([socket.sent.map((s) => s.options?.messageId), socket.checks], [["3EB0U1"], [[TO]]])
      assert.deepStrictEqual(rec.take(), [])
      // Nothing was kept: the next first message asks again.
      socket.onWhatsAppOutcome = () => ({ _tag: "fail", error: new Boom("Timed Out", { statusCode: 408 }) })
      yield* session.send({ waMessageId: "3EB0U2", to: TO, content: { kind: "text", text: "Hi" }, firstContact: true })
      assert.deepStrictEqual([socket.sent.length, socket.checks.length], [2, 2])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("not connected: unavailable, and WhatsApp is not asked", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* Harness.open()
      const failed = yield* Effect.flip(session.exists(TO))
      assert.deepStrictEqual([failed._tag, failed.reason], ["DriverUnavailable", "the number is not connected (status none)"])
    }).pipe(Effect.provide(h.layer))
  })
})
