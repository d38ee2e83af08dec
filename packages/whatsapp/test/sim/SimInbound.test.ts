/**
 * Messages that peers write to the gateway's numbers, and how events reach sessions: in order,
 * one at a time per session, queued while a number is not connected, never held up by another
 * number's slow handler.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import type { SimConfig } from "../../src/sim/SimConfig.js"
import { SimNetwork } from "../../src/sim/SimNetwork.js"
import * as SimulatorDriver from "../../src/sim/SimulatorDriver.js"
import { type DriverEvent, readAll, WhatsAppDriver } from "../../src/WhatsAppDriver.js"
import * as Recorder from "../support/Recorder.js"

const A = "77010000001"
const B = "77010000002"
const PEER = "77779998877"

const run = <A, E>(config: Partial<SimConfig>, test: Effect.Effect<A, E, WhatsAppDriver | SimNetwork | Scope.Scope>) =>
  Effect.provide(test, SimulatorDriver.layerTest(config))

const open = (phone: string, onEvent: (event: DriverEvent) => Effect.Effect<void>, linked = false) =>
  Effect.flatMap(WhatsAppDriver, (driver) => driver.open({ id: 1, phone, linked }, onEvent))

/** Links `phone` through its session by QR and a scan at the current time. */
const link = (phone: string, session: { readonly link: (m: { kind: "qr" }) => Effect.Effect<void, unknown> }) =>
  Effect.gen(function*() {
    yield* Effect.orDie(session.link({ kind: "qr" }))
    yield* Recorder.settle
    yield* Effect.flatMap(SimNetwork, (network) => network.scan(phone))
    yield* Recorder.settle
  })

const noScan: Partial<SimConfig> = { autoScan: false }

describe("SimNetwork inbound", () => {
  it.scoped("delivers a peer's messages in order, as the network's messages with fresh ids", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec.onEvent)
        yield* link(A, session)
        rec.take()
        yield* TestClock.adjust(700)
        const sent = []
        for (const text of ["one", "two", "three", "four", "five"]) {
          sent.push(yield* network.inbound({ to: A, from: PEER, name: "Aigerim", text }))
        }
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take(), ["one", "two", "three", "four", "five"].map((t) => `700 in ${PEER}: ${t}`))
        assert.deepStrictEqual(sent.map((s) => s.delivered), [true, true, true, true, true])
        const messages = rec.events.flatMap((e) => e._tag === "Incoming" ? [e.message] : [])
        assert.deepStrictEqual(messages.map((m) => m.waMessageId), sent.map((s) => s.message.waMessageId))
        assert.strictEqual(new Set(messages.map((m) => m.waMessageId)).size, 5)
        assert.deepStrictEqual({ ...messages[0], waMessageId: "" }, {
          waMessageId: "",
          fromMe: false,
          chatId: `${PEER}@c.us`,
          peer: PEER,
          peerLid: null,
          name: "Aigerim",
          isGroup: false,
          groupSubject: null,
          author: null,
          type: "text",
          text: "one",
          timestamp: 700,
          media: null
        })
      })
    ))

  it.scoped("group messages, messages written on the number's own phone, files", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec.onEvent)
        yield* link(A, session)
        yield* network.inbound({ to: A, from: PEER, text: "hi all", group: { id: "120363041234567890", subject: "Team" } })
        yield* network.inbound({ to: A, from: PEER, text: "from my phone", fromMe: true })
        const bytes = new Uint8Array([7, 7, 7, 7])
        yield* network.inbound({
          to: A,
          from: PEER,
          text: "scan",
          type: "document",
          media: { mimeType: "application/pdf", filename: "scan.pdf", bytes }
        })
        yield* Recorder.settle
        const [group, own, file] = rec.events.flatMap((e) => e._tag === "Incoming" ? [e.message] : [])
        assert.deepStrictEqual(
          [group.chatId, group.peer, group.isGroup, group.groupSubject, group.author, group.fromMe],
          ["120363041234567890@g.us", "120363041234567890", true, "Team", PEER, false]
        )
        assert.deepStrictEqual([own.fromMe, own.chatId, own.peer], [true, `${PEER}@c.us`, PEER])
        assert.deepStrictEqual(
          [file.type, file.media?.mimeType, file.media?.filename, file.media?.size],
          ["document", "application/pdf", "scan.pdf", 4]
        )
        assert.deepStrictEqual(yield* readAll(file.media!.download), bytes)
      })
    ))

  it.scoped("queued while the session is closed, delivered in order after STARTING and WORKING when it opens", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const first = Recorder.make()
        const scope = yield* Scope.make()
        const session = yield* Scope.extend(open(A, first.onEvent), scope)
        yield* link(A, session)
        yield* Scope.close(scope, Exit.void)
        yield* TestClock.adjust(100)
        const queued = [
          yield* network.inbound({ to: A, from: PEER, text: "are you there?" }),
          yield* network.inbound({ to: A, from: B, text: "hello" })
        ]
        assert.deepStrictEqual(queued.map((q) => q.delivered), [false, false])
        assert.strictEqual((yield* network.number(A)).queued, 2)
        yield* TestClock.adjust(100)
        const second = Recorder.make()
        yield* open(A, second.onEvent, true)
        yield* Recorder.settle
        assert.deepStrictEqual(second.take(), ["200 STARTING", "200 WORKING", `200 in ${PEER}: are you there?`, `200 in ${B}: hello`])
        // Queued messages keep the time they were written.
        const times = second.events.flatMap((e) => e._tag === "Incoming" ? [e.message.timestamp] : [])
        assert.deepStrictEqual(times, [100, 100])
        assert.strictEqual((yield* network.number(A)).queued, 0)
        assert.deepStrictEqual(first.take().filter((l) => l.includes(" in ")), [])
      })
    ))

  it.scoped("queued for a number that is still linking, delivered when it reaches WORKING", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec.onEvent)
        yield* session.link({ kind: "qr" })
        const { delivered } = yield* network.inbound({ to: A, from: PEER, text: "early" })
        yield* TestClock.adjust(50)
        yield* network.scan(A)
        yield* Recorder.settle
        assert.strictEqual(delivered, false)
        assert.deepStrictEqual(rec.take().slice(-2), ["50 WORKING", `50 in ${PEER}: early`])
      })
    ))

  it.scoped("open with linked: true (a restarted process) connects; unless the network logged the number out", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const a = Recorder.make()
        yield* open(A, a.onEvent, true)
        yield* Recorder.settle
        assert.deepStrictEqual(a.take(), ["0 STARTING", "0 WORKING"])
        yield* network.disconnect(A, "logged_out")
        const again = Recorder.make()
        yield* open(A, again.onEvent, true)
        yield* Recorder.settle
        assert.deepStrictEqual(again.take(), ["0 STOPPED (logged out)"])
      })
    ))

  it.scoped("one event at a time per session; a slow handler delays only its own number", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const log: Array<string> = []
        const note = (who: string, what: string) =>
          Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => log.push(`${at} ${who} ${what}`)))
        const text = (event: DriverEvent) => event._tag === "Incoming" ? event.message.text : event._tag
        // A's handler takes 10 s for each incoming message; B's is instant.
        const slow = (event: DriverEvent) =>
          event._tag === "Incoming"
            ? Effect.zipRight(note("A", `start ${text(event)}`), Effect.zipRight(Effect.sleep("10 seconds"), note("A", `end ${text(event)}`)))
            : Effect.void
        const fast = (event: DriverEvent) =>
          event._tag === "Incoming"
            ? note("B", text(event))
            : event._tag === "Ack"
            ? note("B", `ack ${event.ack}`)
            : Effect.void
        const a = yield* open(A, slow)
        const b = yield* open(B, fast)
        yield* link(A, a)
        yield* link(B, b)
        yield* network.inbound({ to: A, from: PEER, text: "a1" })
        yield* network.inbound({ to: A, from: PEER, text: "a2" })
        yield* network.inbound({ to: B, from: PEER, text: "b1" })
        yield* b.send({ waMessageId: "M1", to: PEER, content: { kind: "text", text: "reply" } })
        yield* TestClock.adjust("1 second")
        yield* network.inbound({ to: B, from: PEER, text: "b2" })
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(log, [
          "0 A start a1",
          "0 B b1",
          "0 B ack sent",
          "500 B ack delivered",
          "1000 B b2",
          "2000 B ack read",
          "10000 A end a1",
          "10000 A start a2",
          "20000 A end a2"
        ])
      })
    ))

  it.scoped("a handler that dies does not silence its session", () =>
    run(
      noScan,
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const seen: Array<string> = []
        const session = yield* open(A, (event) =>
          event._tag === "Incoming" && event.message.text === "boom"
            ? Effect.die("handler bug")
            : Effect.sync(() => void (event._tag === "Incoming" && seen.push(event.message.text))))
        yield* link(A, session)
        yield* network.inbound({ to: A, from: PEER, text: "boom" })
        yield* network.inbound({ to: A, from: PEER, text: "after" })
        yield* Recorder.settle
        assert.deepStrictEqual(seen, ["after"])
      })
    ))
})
