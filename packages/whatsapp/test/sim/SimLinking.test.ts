/**
 * Linking a number on the simulated network (QR, pairing code, automatic scan), keeping it
 * linked across sessions, and losing the connection or the link.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import type { SimConfig } from "../../src/sim/SimConfig.js"
import { SimNetwork } from "../../src/sim/SimNetwork.js"
import { REPLACED } from "../../src/sim/SimSession.js"
import * as SimulatorDriver from "../../src/sim/SimulatorDriver.js"
import { WhatsAppDriver } from "../../src/WhatsAppDriver.js"
import * as Recorder from "../support/Recorder.js"

const A = "77010000001"
const B = "77010000002"

const run = <A, E>(config: Partial<SimConfig>, test: Effect.Effect<A, E, WhatsAppDriver | SimNetwork | Scope.Scope>) =>
  Effect.provide(test, SimulatorDriver.layerTest(config))

const open = (phone: string, recorder: Recorder.Recorder) =>
  Effect.flatMap(WhatsAppDriver, (driver) => driver.open({ id: 1, phone, linked: false }, recorder.onEvent))

/** A session in a scope of its own, to close before the test ends. */
const openClosable = (phone: string, recorder: Recorder.Recorder) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const session = yield* Scope.extend(open(phone, recorder), scope)
    return { session, close: Scope.close(scope, Exit.void) }
  })

describe("SimNetwork linking", () => {
  it.scoped("by QR with autoScan: STARTING, SCAN_QR_CODE, then WORKING after scanDelayMs", () =>
    run(
      {},
      Effect.gen(function*() {
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take(), ["0 none"])
        yield* session.link({ kind: "qr" })
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take(), ["0 STARTING", `0 SCAN_QR_CODE qr=sim-qr:${A}:1`])
        yield* TestClock.adjust(999)
        assert.deepStrictEqual(rec.take(), [])
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(rec.take(), ["1000 WORKING"])
        // The QR timers of the finished attempt do nothing more.
        yield* TestClock.adjust("10 minutes")
        assert.deepStrictEqual(rec.take(), [])
        const network = yield* SimNetwork
        const state = yield* network.number(A)
        assert.deepStrictEqual(state, {
          phone: A,
          linked: true,
          status: "WORKING",
          qr: null,
          pairingCode: null,
          reason: null,
          sessionOpen: true,
          queued: 0,
          sessions: 1
        })
      })
    ))

  it.scoped("by QR without autoScan: waits for scan(phone); scanning when no QR is shown is refused", () =>
    run(
      { autoScan: false },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        assert.strictEqual((yield* Effect.flip(network.scan(A)))._tag, "SimWrongState")
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust("5 seconds")
        assert.deepStrictEqual(rec.take(), ["0 none", "0 STARTING", `0 SCAN_QR_CODE qr=sim-qr:${A}:1`])
        const scanned = yield* network.scan(A)
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take(), ["5000 WORKING"])
        assert.strictEqual(scanned.linked, true)
        assert.strictEqual((yield* Effect.flip(network.scan(A)))._tag, "SimWrongState")
        assert.strictEqual((yield* Effect.flip(network.scan(B)))._tag, "SimUnknownNumber")
      })
    ))

  it.scoped("refreshes the QR every qrRefreshMs, 5 times, then FAILED: qr refs ran out", () =>
    run(
      { autoScan: false },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust("10 minutes")
        assert.deepStrictEqual(rec.take(), [
          "0 none",
          "0 STARTING",
          `0 SCAN_QR_CODE qr=sim-qr:${A}:1`,
          `20000 SCAN_QR_CODE qr=sim-qr:${A}:2`,
          `40000 SCAN_QR_CODE qr=sim-qr:${A}:3`,
          `60000 SCAN_QR_CODE qr=sim-qr:${A}:4`,
          `80000 SCAN_QR_CODE qr=sim-qr:${A}:5`,
          `100000 SCAN_QR_CODE qr=sim-qr:${A}:6`,
          "120000 FAILED (qr refs ran out)"
        ])
        assert.strictEqual((yield* Effect.flip(network.scan(A)))._tag, "SimWrongState")
        const state = yield* network.number(A)
        assert.deepStrictEqual([state.linked, state.status, state.qr], [false, "FAILED", null])
      })
    ))

  it.scoped("a new link attempt restarts the QRs; a scan between refreshes links", () =>
    run(
      { autoScan: false, qrRefreshMs: 1000 },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust(1500)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust(1500)
        yield* network.scan(A)
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take(), [
          "0 none",
          "0 STARTING",
          `0 SCAN_QR_CODE qr=sim-qr:${A}:1`,
          `1000 SCAN_QR_CODE qr=sim-qr:${A}:2`,
          "1500 STARTING",
          `1500 SCAN_QR_CODE qr=sim-qr:${A}:1`,
          `2500 SCAN_QR_CODE qr=sim-qr:${A}:2`,
          "3000 WORKING"
        ])
      })
    ))

  it.scoped("by pairing code: 8 characters without dash; a wrong code is refused, the right one links in any form", () =>
    run(
      { autoScan: false },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "code" })
        yield* Recorder.settle
        const shown = rec.events.at(-1)
        assert(shown?._tag === "Connection" && shown.status === "SCAN_QR_CODE" && shown.qr === undefined)
        const code = shown.pairingCode!
        assert.match(code, /^[1-9A-HJ-NP-TV-Z]{8}$/)
        assert.deepStrictEqual(rec.take(), ["0 none", "0 STARTING", `0 SCAN_QR_CODE code=${code}`])
        assert.strictEqual((yield* network.number(A)).pairingCode, code)

        assert.strictEqual((yield* Effect.flip(network.scan(A)))._tag, "SimWrongState")
        const wrong = code.startsWith("1") ? `2${code.slice(1)}` : `1${code.slice(1)}`
        assert.strictEqual((yield* Effect.flip(network.pair(A, wrong)))._tag, "SimWrongPairingCode")
        yield* TestClock.adjust("30 seconds")
        assert.deepStrictEqual(rec.take(), [])

        yield* network.pair(A, `${code.slice(0, 4)}-${code.slice(4)}`.toLowerCase())
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take(), ["30000 WORKING"])
        assert.strictEqual((yield* network.number(A)).linked, true)
      })
    ))

  it.scoped("a pairing code nobody enters expires after as long as the QRs last, without refreshes", () =>
    run(
      { autoScan: false },
      Effect.gen(function*() {
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "code" })
        yield* TestClock.adjust("10 minutes")
        const lines = rec.take()
        assert.deepStrictEqual(lines.slice(0, 2), ["0 none", "0 STARTING"])
        assert.match(lines[2], /^0 SCAN_QR_CODE code=[1-9A-Z]{8}$/)
        assert.deepStrictEqual(lines.slice(3), ["120000 FAILED (pairing code expired)"])
      })
    ))

  it.scoped("by pairing code with autoScan: the code is entered by itself after scanDelayMs", () =>
    run(
      { scanDelayMs: 2500 },
      Effect.gen(function*() {
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "code" })
        yield* TestClock.adjust("1 minute")
        assert.deepStrictEqual(rec.take().map((l) => l.replace(/code=\w+/, "code=?")), [
          "0 none",
          "0 STARTING",
          "0 SCAN_QR_CODE code=?",
          "2500 WORKING"
        ])
      })
    ))

  it.scoped("a linked number stays linked across sessions: the next open goes STARTING then WORKING", () =>
    run(
      {},
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const first = Recorder.make()
        const { close, session } = yield* openClosable(A, first)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        yield* close
        assert.deepStrictEqual(
          [(yield* network.number(A)).linked, (yield* network.number(A)).sessionOpen],
          [true, false]
        )
        yield* TestClock.adjust("1 minute")
        const second = Recorder.make()
        const again = yield* open(A, second)
        yield* Recorder.settle
        assert.deepStrictEqual(second.take(), ["61000 STARTING", "61000 WORKING"])
        // Linking a linked number only tells where it stands.
        yield* again.link({ kind: "qr" })
        yield* Recorder.settle
        assert.deepStrictEqual(second.take(), ["61000 WORKING"])
        // The closed session heard nothing after it closed.
        assert.deepStrictEqual(first.take(), ["0 none", "0 STARTING", `0 SCAN_QR_CODE qr=sim-qr:${A}:1`, "1000 WORKING"])
      })
    ))

  it.scoped("closing the session while linking abandons the attempt: no scan, no more QRs", () =>
    run(
      { autoScan: false },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const { close, session } = yield* openClosable(A, rec)
        yield* session.link({ kind: "qr" })
        yield* Recorder.settle
        yield* close
        assert.strictEqual((yield* Effect.flip(network.scan(A)))._tag, "SimWrongState")
        yield* TestClock.adjust("10 minutes")
        assert.deepStrictEqual(rec.take(), ["0 none", "0 STARTING", `0 SCAN_QR_CODE qr=sim-qr:${A}:1`])
        assert.deepStrictEqual((yield* network.number(A)).status, "none")
        assert.strictEqual((yield* Effect.flip(session.link({ kind: "qr" })))._tag, "DriverUnavailable")
      })
    ))

  it.scoped("a second session of the same number replaces the first", () =>
    run(
      {},
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const first = Recorder.make()
        const old = yield* open(A, first)
        yield* old.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        const second = Recorder.make()
        yield* open(A, second)
        yield* network.inbound({ to: A, from: B, text: "hi" })
        yield* Recorder.settle
        assert.deepStrictEqual(first.take(), [
          "0 none",
          "0 STARTING",
          `0 SCAN_QR_CODE qr=sim-qr:${A}:1`,
          "1000 WORKING",
          `1000 STARTING (${REPLACED})`
        ])
        assert.deepStrictEqual(second.take(), ["1000 STARTING", "1000 WORKING", `1000 in ${B}: hi`])
        const refused = yield* Effect.flip(old.send({ waMessageId: "X1", to: B, content: { kind: "text", text: "x" } }))
        assert.deepStrictEqual([refused._tag, refused.reason], ["DriverUnavailable", "the session is closed"])
      })
    ))

  it.scoped("a replaced session still open takes the number back reconnectDelayMs after the newer one closes", () =>
    run(
      { reconnectDelayMs: 1_000 },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        // The number's owner is connected; a late session of a previous owner replaces it, then
        // closes (that owner let the number go): the owner must not be left without a session.
        const owner = Recorder.make()
        const current = yield* open(A, owner)
        yield* current.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        const late = yield* openClosable(A, Recorder.make())
        yield* Recorder.settle
        assert.deepStrictEqual(owner.take().slice(-2), ["1000 WORKING", `1000 STARTING (${REPLACED})`])
        yield* late.close
        assert.deepStrictEqual([(yield* network.number(A)).sessionOpen], [false])
        yield* TestClock.adjust(999)
        yield* Recorder.settle
        assert.deepStrictEqual(owner.take(), [])
        yield* TestClock.adjust(1)
        yield* network.inbound({ to: A, from: B, text: "back" })
        yield* Recorder.settle
        assert.deepStrictEqual(owner.take(), ["2000 STARTING", "2000 WORKING", `2000 in ${B}: back`])
        const state = yield* network.number(A)
        // Three connections: the owner's, the late one's, and the owner's again.
        assert.deepStrictEqual([state.status, state.sessionOpen, state.sessions], ["WORKING", true, 3])
        yield* current.send({ waMessageId: "X2", to: B, content: { kind: "text", text: "sent again" } })
      })
    ))

  it.scoped("a replaced session closed before the newer one does not come back", () =>
    run(
      { reconnectDelayMs: 1_000 },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const first = yield* openClosable(A, Recorder.make())
        yield* first.session.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        const second = yield* openClosable(A, Recorder.make())
        yield* first.close
        yield* second.close
        yield* TestClock.adjust("10 seconds")
        assert.deepStrictEqual([(yield* network.number(A)).sessionOpen], [false])
      })
    ))

  it.scoped("logged_out from the phone: STOPPED, unlinked, and the next session starts STOPPED", () =>
    run(
      {},
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const { close, session } = yield* openClosable(A, rec)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        const state = yield* network.disconnect(A, "logged_out")
        yield* Recorder.settle
        assert.deepStrictEqual([state.linked, state.status, state.reason], [false, "STOPPED", "logged out from the phone"])
        assert.deepStrictEqual(rec.take().slice(-2), ["1000 WORKING", "1000 STOPPED (logged out from the phone)"])
        const refused = yield* Effect.flip(session.send({ waMessageId: "X1", to: B, content: { kind: "text", text: "x" } }))
        assert.strictEqual(refused._tag, "DriverUnavailable")
        assert.strictEqual((yield* Effect.flip(network.disconnect(A, "logged_out")))._tag, "SimWrongState")
        yield* close
        const next = Recorder.make()
        yield* open(A, next)
        yield* Recorder.settle
        assert.deepStrictEqual(next.take(), ["1000 STOPPED (logged out)"])
      })
    ))

  it.scoped("session.logout unlinks the number: STOPPED", () =>
    run(
      {},
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        yield* session.logout
        yield* Recorder.settle
        assert.deepStrictEqual(rec.take().slice(-1), ["1000 STOPPED (logged out)"])
        assert.strictEqual((yield* network.number(A)).linked, false)
      })
    ))

  it.scoped("connection_lost: STARTING, WORKING again after reconnectDelayMs; nothing flows meanwhile", () =>
    run(
      { reconnectDelayMs: 3000 },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        const rec = Recorder.make()
        const session = yield* open(A, rec)
        yield* session.link({ kind: "qr" })
        yield* TestClock.adjust("1 second")
        rec.take()
        yield* network.disconnect(A, "connection_lost")
        const queued = yield* network.inbound({ to: A, from: B, text: "while away" })
        assert.strictEqual(queued.delivered, false)
        const refused = yield* Effect.flip(session.send({ waMessageId: "X1", to: B, content: { kind: "text", text: "x" } }))
        assert.deepStrictEqual([refused._tag, refused.reason], ["DriverUnavailable", "the number is not connected (status STARTING)"])
        yield* TestClock.adjust(2999)
        assert.deepStrictEqual(rec.take(), ["1000 STARTING (connection lost)"])
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(rec.take(), ["4000 WORKING", `4000 in ${B}: while away`])
        assert.strictEqual((yield* network.number(A)).linked, true)
      })
    ))

  it.scoped("disconnect needs a known, linked number with a session", () =>
    run(
      { autoScan: false },
      Effect.gen(function*() {
        const network = yield* SimNetwork
        assert.strictEqual((yield* Effect.flip(network.disconnect(A, "connection_lost")))._tag, "SimUnknownNumber")
        const rec = Recorder.make()
        yield* open(A, rec)
        const refused = yield* Effect.flip(network.disconnect(A, "connection_lost"))
        assert.deepStrictEqual([refused._tag, refused.message], ["SimWrongState", `Number ${A} (status none): the number is not linked`])
      })
    ))
})
