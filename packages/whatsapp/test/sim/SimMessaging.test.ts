/**
 * Sending through the simulated network: what it records, the acks and their timing, failures
 * on demand, phones that do not exist, messages between the gateway's own numbers and peers
 * that reply.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import type { SimConfig } from "../../src/sim/SimConfig.js"
import { SimNetwork } from "../../src/sim/SimNetwork.js"
import * as SimulatorDriver from "../../src/sim/SimulatorDriver.js"
import { fileOf, type OutgoingMessage, readAll, type Session, WhatsAppDriver } from "../../src/WhatsAppDriver.js"
import * as Recorder from "../support/Recorder.js"

const file = (bytes: Uint8Array, mimeType: string) => ({ open: fileOf(bytes), size: bytes.byteLength, mimeType })

const A = "77010000001"
const B = "77010000002"
const PEER = "77779998877"

const run = <A, E>(config: Partial<SimConfig>, test: Effect.Effect<A, E, WhatsAppDriver | SimNetwork | Scope.Scope>) =>
  Effect.provide(test, SimulatorDriver.layerTest(config))

/** A number linked by QR at time 0 (autoScan after 0 ms), its recorder emptied. */
const linked = (phone: string) =>
  Effect.gen(function*() {
    const driver = yield* WhatsAppDriver
    const rec = Recorder.make()
    const session = yield* driver.open({ id: 1, phone, linked: false }, rec.onEvent)
    yield* session.link({ kind: "qr" })
    yield* Recorder.settle
    const network = yield* SimNetwork
    yield* network.scan(phone)
    yield* Recorder.settle
    assert.deepStrictEqual(rec.take().at(-1), "0 WORKING")
    return { session, rec }
  })

const text = (waMessageId: string, to: string, body = "hello"): OutgoingMessage => ({
  waMessageId,
  to,
  content: { kind: "text", text: body }
})

const noScan: Partial<SimConfig> = { autoScan: false }

describe("SimNetwork sending", () => {
  it.scoped("records the message and acks sent at once, delivered at deliveredDelayMs, read at readDelayMs", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* session.send(text("M1", PEER, "Салем"))
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take(), ["0 ack M1 sent"])
        assert.deepStrictEqual(yield* network.sent(), [{
          waMessageId: "M1",
          from: A,
          to: PEER,
          kind: "text",
          text: "Салем",
          caption: null,
          filename: null,
          mediaSize: null,
          mimeType: null,
          timestamp: 0,
          ack: "sent"
        }])
        yield* TestClock.adjust(499)
        assert.deepStrictEqual(rec.take(), [])
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(rec.take(), ["500 ack M1 delivered"])
        assert.strictEqual((yield* network.sent())[0].ack, "delivered")
        yield* TestClock.adjust(1499)
        assert.deepStrictEqual(rec.take(), [])
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(rec.take(), ["2000 ack M1 read"])
        yield* TestClock.adjust("1 hour")
        assert.deepStrictEqual(rec.take(), [])
        assert.strictEqual((yield* network.sent())[0].ack, "read")
      })
    ))

  it.scoped("records files by kind, caption, filename, size and type; filters the log by from and to", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { session } = yield* linked(A)
        const { session: other } = yield* linked(B)
        yield* TestClock.adjust(250)
        yield* session.send({
          waMessageId: "D1",
          to: PEER,
          content: {
            kind: "document",
            filename: "invoice.pdf",
            caption: "Invoice",
            media: file(new Uint8Array(1234), "application/pdf")
          }
        })
        yield* session.send({ waMessageId: "V1", to: B, content: { kind: "voice", media: file(new Uint8Array(10), "audio/ogg") } })
        yield* other.send({ waMessageId: "I1", to: PEER, content: { kind: "image", media: file(new Uint8Array(3), "image/png") } })
        const summary = (log: ReadonlyArray<{ readonly waMessageId: string }>) => log.map((m) => m.waMessageId)
        assert.deepStrictEqual(summary(yield* network.sent()), ["D1", "V1", "I1"])
        assert.deepStrictEqual(summary(yield* network.sent({ from: A })), ["D1", "V1"])
        assert.deepStrictEqual(summary(yield* network.sent({ to: PEER })), ["D1", "I1"])
        assert.deepStrictEqual(summary(yield* network.sent({ from: B, to: PEER })), ["I1"])
        const [document, voice, image] = yield* network.sent()
        assert.deepStrictEqual(
          { ...document, ack: undefined },
          {
            waMessageId: "D1",
            from: A,
            to: PEER,
            kind: "document",
            text: null,
            caption: "Invoice",
            filename: "invoice.pdf",
            mediaSize: 1234,
            mimeType: "application/pdf",
            timestamp: 250,
            ack: undefined
          }
        )
        assert.deepStrictEqual([voice.kind, voice.caption, voice.mediaSize, voice.mimeType], ["voice", null, 10, "audio/ogg"])
        assert.deepStrictEqual([image.kind, image.caption, image.filename, image.mediaSize], ["image", null, null, 3])
      })
    ))

  it.scoped("never reads when readDelayMs is null", () =>
    run(
      { ...noScan, readDelayMs: null },
      Effect.gen(function*() {
        const { rec, session } = yield* linked(A)
        yield* session.send(text("M1", PEER))
        yield* TestClock.adjust("1 day")
        assert.deepStrictEqual(rec.take(), ["0 ack M1 sent", "500 ack M1 delivered"])
      })
    ))

  it.scoped("reject on demand: SendRejected for the next N messages to that phone, then accepted", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* network.failures(PEER, { mode: "reject", times: 2 })
        const first = yield* Effect.flip(session.send(text("M1", PEER)))
        const second = yield* Effect.flip(session.send(text("M2", PEER)))
        assert.deepStrictEqual([first._tag, second._tag], ["SendRejected", "SendRejected"])
        // Other phones are not affected.
        yield* session.send(text("M3", B))
        yield* session.send(text("M4", PEER))
        yield* TestClock.adjust(500)
        assert.deepStrictEqual(rec.take(), ["0 ack M3 sent", "0 ack M4 sent", "500 ack M3 delivered", "500 ack M4 delivered"])
        assert.deepStrictEqual((yield* network.sent()).map((m) => m.waMessageId), ["M3", "M4"])
      })
    ))

  it.scoped("reject without times: every message to that phone, until reset", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { session } = yield* linked(A)
        yield* network.failures(PEER, { mode: "reject" })
        for (const id of ["M1", "M2", "M3", "M4", "M5"]) {
          assert.strictEqual((yield* Effect.flip(session.send(text(id, PEER))))._tag, "SendRejected")
        }
        yield* network.reset
        yield* session.send(text("M6", PEER))
        assert.deepStrictEqual((yield* network.sent()).map((m) => m.waMessageId), ["M6"])
      })
    ))

  it.scoped("delivery failure on demand: sent, then failed at deliveredDelayMs, never read", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* network.failures(PEER, { mode: "fail", times: 1 })
        yield* session.send(text("M1", PEER))
        yield* session.send(text("M2", PEER))
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take(), [
          "0 ack M1 sent",
          "0 ack M2 sent",
          "500 ack M1 failed (delivery failed (simulated))",
          "500 ack M2 delivered",
          "2000 ack M2 read"
        ])
        assert.deepStrictEqual((yield* network.sent()).map((m) => m.ack), ["failed", "read"])
      })
    ))

  it.scoped("a phone without WhatsApp: the network accepts, acks sent, then failed", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* network.setPhone(PEER, false)
        yield* session.send(text("M1", PEER))
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take(), ["0 ack M1 sent", "500 ack M1 failed (the recipient is not on WhatsApp)"])
      })
    ))

  it.scoped("exists answers from the model: registrations, linked numbers, then existsByDefault", () =>
    run(
      { ...noScan, existsByDefault: false },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { session } = yield* linked(A)
        yield* network.setPhone(PEER, true)
        assert.deepStrictEqual(yield* session.exists(PEER), { exists: true, chatId: `${PEER}@c.us` })
        assert.deepStrictEqual(yield* session.exists(B), { exists: false, chatId: `${B}@c.us` })
        yield* linked(B)
        assert.deepStrictEqual(yield* session.exists(B), { exists: true, chatId: `${B}@c.us` })
        yield* network.setPhone(PEER, false)
        assert.strictEqual((yield* session.exists(PEER)).exists, false)
        yield* network.updateConfig({ existsByDefault: true })
        assert.strictEqual((yield* session.exists("77012223344")).exists, true)
        assert.strictEqual(yield* network.exists(PEER), false)
      })
    ))

  it.scoped("send and exists need a connected session", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const driver = yield* WhatsAppDriver
        const session: Session = yield* driver.open({ id: 1, phone: A, linked: false }, () => Effect.void)
        const sending = yield* Effect.flip(session.send(text("M1", PEER)))
        const checking = yield* Effect.flip(session.exists(PEER))
        assert.deepStrictEqual(
          [sending._tag, sending.reason, checking._tag],
          ["DriverUnavailable", "the number is not connected (status none)", "DriverUnavailable"]
        )
      })
    ))

  it.scoped("a re-send under the same id is not a second message: one log entry, its current ack", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* session.send(text("M1", PEER))
        yield* TestClock.adjust(600)
        yield* session.send(text("M1", PEER))
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take(), ["0 ack M1 sent", "500 ack M1 delivered", "600 ack M1 delivered", "2000 ack M1 read"])
        assert.strictEqual((yield* network.sent()).length, 1)
      })
    ))

  it.scoped("between two numbers of the gateway: the recipient receives it when it is delivered, file included", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const a = yield* linked(A)
        const b = yield* linked(B)
        const bytes = new Uint8Array([1, 2, 3])
        yield* a.session.send(text("M1", B, "to my other number"))
        yield* a.session.send({
          waMessageId: "M2",
          to: B,
          content: { kind: "image", caption: "photo", media: file(bytes, "image/jpeg") }
        })
        yield* TestClock.adjust(500)
        assert.deepStrictEqual(b.rec.take(), [`500 in ${A}: to my other number`, `500 in ${A}: photo`])
        assert.deepStrictEqual(a.rec.take(), ["0 ack M1 sent", "0 ack M2 sent", "500 ack M1 delivered", "500 ack M2 delivered"])
        const [first, second] = b.rec.events.flatMap((e) => e._tag === "Incoming" ? [e.message] : [])
        assert.deepStrictEqual({ ...first }, {
          waMessageId: "M1",
          fromMe: false,
          chatId: `${A}@c.us`,
          peer: A,
          peerLid: null,
          name: null,
          isGroup: false,
          groupSubject: null,
          author: null,
          type: "text",
          text: "to my other number",
          timestamp: 0,
          media: null
        })
        assert.deepStrictEqual([second.type, second.media?.mimeType, second.media?.size], ["image", "image/jpeg", 3])
        assert.deepStrictEqual(yield* readAll(second.media!.download), bytes)
      })
    ))

  it.scoped("a peer with auto-reply answers each message delayMs after receiving it", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* network.autoReply(PEER, { text: "Thanks, we will call you", delayMs: 3000, name: "Shop" })
        yield* session.send(text("M1", PEER))
        yield* TestClock.adjust(1000)
        yield* session.send(text("M2", PEER))
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take(), [
          "0 ack M1 sent",
          "500 ack M1 delivered",
          "1000 ack M2 sent",
          "1500 ack M2 delivered",
          "2000 ack M1 read",
          "3000 ack M2 read",
          `3500 in ${PEER}: Thanks, we will call you`,
          `4500 in ${PEER}: Thanks, we will call you`
        ])
        const replies = rec.events.flatMap((e) => e._tag === "Incoming" ? [e.message] : [])
        assert.deepStrictEqual(replies.map((m) => [m.name, m.chatId, m.timestamp]), [
          ["Shop", `${PEER}@c.us`, 3500],
          ["Shop", `${PEER}@c.us`, 4500]
        ])
        assert.notStrictEqual(replies[0].waMessageId, replies[1].waMessageId)
      })
    ))

  it.scoped("no auto-reply to a message that was not delivered, nor after it is switched off", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* network.autoReply(PEER, { text: "auto", delayMs: 100 })
        yield* network.failures(PEER, { mode: "fail", times: 1 })
        yield* session.send(text("M1", PEER))
        yield* TestClock.adjust("1 minute")
        yield* network.autoReply(PEER, null)
        yield* session.send(text("M2", PEER))
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take().filter((l) => l.includes(" in ")), [])
      })
    ))

  it.scoped("reset forgets the log, settings, phones and pending acks, but keeps open sessions working", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const { rec, session } = yield* linked(A)
        yield* network.updateConfig({ deliveredDelayMs: 5000, existsByDefault: false })
        yield* network.setPhone(PEER, true)
        yield* session.send(text("M1", PEER))
        yield* network.reset
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take(), ["0 ack M1 sent"])
        assert.deepStrictEqual(yield* network.sent(), [])
        assert.deepStrictEqual((yield* network.config).deliveredDelayMs, 500)
        assert.deepStrictEqual((yield* network.number(A)).status, "WORKING")
        yield* session.send(text("M2", PEER))
        yield* TestClock.adjust(500)
        assert.deepStrictEqual(rec.take(), ["60000 ack M2 sent", "60500 ack M2 delivered"])
      })
    ))

  it.scoped("a closing session handles the acks it had received first; those it cannot in time reach the next session", () =>
    run(
      { autoScan: false, readDelayMs: null },
      Effect.gen(function*() {
        const driver = yield* WhatsAppDriver
        // The first session stores an ack in a second, and never stores M2's delivery.
        const closing = yield* Scope.make()
        const first = Recorder.make({
          handle: (event) =>
            event._tag !== "Ack" || event.ack !== "delivered"
              ? Effect.void
              : event.waMessageId === "M2"
              ? Effect.never
              : Effect.sleep("1 second")
        })
        const session = yield* driver.open({ id: 1, phone: A, linked: true }, first.onEvent).pipe(Scope.extend(closing))
        yield* Recorder.settle
        for (const id of ["M1", "M2", "M3"]) yield* session.send(text(id, PEER))
        yield* TestClock.adjust(500)
        assert.deepStrictEqual(first.take().filter((l) => l.includes("delivered")), ["500 ack M1 delivered"])

        // It closes while storing M1's delivery, with M2's and M3's behind it.
        const closed = yield* Effect.fork(Scope.close(closing, Exit.void))
        yield* TestClock.adjust(1000)
        assert.deepStrictEqual(first.take(), ["1500 ack M2 delivered"])
        yield* TestClock.adjust("10 seconds")
        yield* Fiber.join(closed)

        // What it could not store in time comes to the number's next session, once.
        const next = Recorder.make()
        yield* driver.open({ id: 1, phone: A, linked: true }, next.onEvent)
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(next.take(), ["11500 STARTING", "11500 WORKING", "11500 ack M2 delivered", "11500 ack M3 delivered"])
      })
    ))
})
