/**
 * Sending through the Baileys driver (the five kinds, under the gateway's own ids), what a
 * failed send means, delivery reports as acks, restrictions, and contact checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Boom } from "@hapi/boom"
import * as Effect from "effect/Effect"
import type { OutgoingContent } from "../../src/WhatsAppDriver.js"
import * as Harness from "./support/Harness.js"

const { advance, flush, working } = Harness
const TO = "77017654321"
const media = { bytes: new Uint8Array([7, 7, 7]), mimeType: "image/png" }

describe("Baileys driver: sending", () => {
  it.scoped("the five kinds go to the phone's JID under the id the gateway chose", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { session } = yield* working(h)
      const contents: Array<OutgoingContent> = [
        { kind: "text", text: "Hello" },
        { kind: "image", media, caption: "Our menu" },
        { kind: "document", media: { ...media, mimeType: "application/pdf" }, filename: "invoice.pdf", caption: "Invoice" },
        { kind: "voice", media: { ...media, mimeType: "audio/ogg; codecs=opus" } },
        { kind: "video", media: { ...media, mimeType: "video/mp4" } }
      ]
      for (const [i, content] of contents.entries()) {
        yield* session.send({ waMessageId: `3EB0ID${i}`, to: TO, content })
      }
      const sent = h.fake.latest().sent
      assert.deepStrictEqual(sent.map((s) => [s.jid, s.options?.messageId]), [0, 1, 2, 3, 4].map((i) => [`${TO}@s.whatsapp.net`, `3EB0ID${i}`]))
      const bytes = Buffer.from([7, 7, 7])
      assert.deepStrictEqual(sent.map((s) => s.content), [
        { text: "Hello" },
        { image: bytes, mimetype: "image/png", caption: "Our menu" },
        { document: bytes, mimetype: "application/pdf", fileName: "invoice.pdf", caption: "Invoice" },
        { audio: bytes, mimetype: "audio/ogg; codecs=opus", ptt: true },
        { video: bytes, mimetype: "video/mp4" }
      ])
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

  it.scoped("server error 463: the message failed and the number is restricted", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      h.fake.latest().emit("messages.update", [{
        key: { remoteJid: `${TO}@s.whatsapp.net`, id: "3EB0R", fromMe: true },
        update: { status: 0, messageStubParameters: ["463", "Your account has been restricted"] }
      }])
      yield* flush
      assert.deepStrictEqual(rec.take(), [
        "0 ack 3EB0R failed (account restricted by WhatsApp (463))",
        "0 restricted (WhatsApp restricted the account: it may not start new chats (463))"
      ])
      const restricted = rec.events.at(-1)!
      assert.deepStrictEqual(restricted, {
        _tag: "Restricted",
        reason: "WhatsApp restricted the account: it may not start new chats (463)",
        until: null
      })
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a reach-out time lock reported on the connection is a restriction until its end", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const ends = new Date("2026-12-01T10:00:00Z")
      h.fake.latest().emit("connection.update", {
        reachoutTimeLock: { isActive: true, timeEnforcementEnds: ends, enforcementType: "BIZ_QUALITY" as any }
      })
      h.fake.latest().emit("connection.update", { reachoutTimeLock: { isActive: false } })
      yield* flush
      assert.deepStrictEqual(rec.events.slice(-1), [{
        _tag: "Restricted",
        reason: "WhatsApp restricted the account from reaching out (BIZ_QUALITY)",
        until: ends.getTime()
      }])
      assert.strictEqual(rec.take().length, 1)
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
      socket.onWhatsAppOutcome = () => ({ _tag: "ok", value: undefined })
      assert.deepStrictEqual(yield* session.exists("1"), { exists: false, chatId: "1@c.us" })
      assert.deepStrictEqual(socket.checks, [[TO], ["77000000000"], ["1"]])
      socket.onWhatsAppOutcome = () => ({ _tag: "fail", error: new Boom("Timed Out", { statusCode: 408 }) })
      const failed = yield* Effect.flip(session.exists(TO))
      assert.deepStrictEqual([failed._tag, failed.reason], ["DriverUnavailable", "contact check failed: Timed Out"])
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
