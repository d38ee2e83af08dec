/**
 * A number's connection through the Baileys driver, on fake sockets emitting Baileys' events:
 * linking by QR and by pairing code, the status of every step, reconnecting with backoff, the
 * restart budget, logging out, and the bound on handshakes in flight.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Harness from "./support/Harness.js"

const { PHONE, advance, flush } = Harness

describe("Baileys driver: linking", () => {
  it.scoped("a number never linked reports none and opens no socket", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open()
      assert.deepStrictEqual(rec.take(), ["0 none"])
      yield* advance(600_000)
      assert.strictEqual(h.fake.sockets.length, 0)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by QR: STARTING, every QR refresh, the scan, the restart WhatsApp asks for, WORKING; durable credentials", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { close, rec, session } = yield* Harness.open({ id: 1 })
      rec.take()
      yield* session.link({ kind: "qr" })
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING"])
      assert.strictEqual(h.fake.sockets.length, 1)
      const first = h.fake.latest()
      assert.isUndefined(first.creds.account)
      first.connecting()
      first.qr("2@ref-1,noise,identity,adv")
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 SCAN_QR_CODE qr=2@ref-1,noise,identity,adv"])
      yield* advance(60_000)
      first.qr("2@ref-2,noise,identity,adv")
      yield* flush
      assert.deepStrictEqual(rec.take(), ["60000 SCAN_QR_CODE qr=2@ref-2,noise,identity,adv"])

      first.pairSuccess(PHONE)
      first.close(515, "Stream Errored (restart required)")
      yield* flush
      // The signed identity is stored before anything else happens.
      assert.strictEqual(Harness.credsOf(h, 1)?.me?.id, `${PHONE}:7@s.whatsapp.net`)
      assert.isDefined(Harness.credsOf(h, 1)?.account)
      assert.deepStrictEqual(rec.take(), ["60000 STARTING"])
      assert.strictEqual(h.fake.sockets.length, 2)
      const second = h.fake.latest()
      assert.strictEqual(second.creds.me?.id, `${PHONE}:7@s.whatsapp.net`)
      second.open()
      yield* flush
      assert.deepStrictEqual(rec.take(), ["60000 WORKING"])
      yield* close
      assert.strictEqual(second.ended, 1)

      // A restart (another runner, another day): connected from the stored credentials, no QR.
      const again = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(again.rec.take(), ["60000 STARTING"])
      assert.strictEqual(h.fake.sockets.length, 3)
      assert.isDefined(h.fake.latest().creds.account)
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(again.rec.take(), ["60000 WORKING"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by QR, never scanned: FAILED (qr refs ran out), and no reconnect", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      yield* session.link({ kind: "qr" })
      yield* flush
      h.fake.latest().qr("2@ref-1")
      yield* advance(60_000)
      h.fake.latest().close(408, "QR refs attempts ended")
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 none", "0 STARTING", "0 SCAN_QR_CODE qr=2@ref-1", "60000 FAILED (qr refs ran out)"])
      yield* advance(600_000)
      assert.strictEqual(h.fake.sockets.length, 1)
      // Linking again starts over with a new device identity.
      const before = h.fake.latest().creds.noiseKey.public
      yield* session.link({ kind: "qr" })
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.notDeepEqual([...h.fake.latest().creds.noiseKey.public], [...before])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by pairing code: asked for the number's phone once WhatsApp is ready, shown without dash; expiry FAILED", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      rec.take()
      yield* session.link({ kind: "code" })
      yield* flush
      const socket = h.fake.latest()
      socket.pairingOutcome = { _tag: "ok", value: "K7PQ-3XWZ" }
      assert.deepStrictEqual(socket.pairingRequests, [])
      socket.qr("2@ref-1")
      yield* flush
      socket.qr("2@ref-2")
      yield* flush
      assert.deepStrictEqual(socket.pairingRequests, [PHONE])
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 SCAN_QR_CODE code=K7PQ3XWZ"])
      yield* advance(180_000)
      socket.close(408, "QR refs attempts ended")
      yield* flush
      assert.deepStrictEqual(rec.take(), ["180000 FAILED (pairing code expired)"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by pairing code, entered on the phone: WORKING after WhatsApp's restart", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      rec.take()
      yield* session.link({ kind: "code" })
      yield* flush
      h.fake.latest().qr("2@ref-1")
      yield* advance(30_000)
      h.fake.latest().pairSuccess(PHONE)
      h.fake.latest().close(515)
      yield* flush
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 SCAN_QR_CODE code=K7PQ3XWZ", "30000 STARTING", "30000 WORKING"])
      assert.strictEqual(h.fake.sockets.length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a pairing code WhatsApp refuses to give: FAILED with the reason", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      rec.take()
      yield* session.link({ kind: "code" })
      yield* flush
      h.fake.latest().pairingOutcome = { _tag: "fail", error: new Error("bad-request") }
      h.fake.latest().qr("2@ref-1")
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 FAILED (pairing code request failed: bad-request)"])
      assert.strictEqual(h.fake.latest().ended, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("linking a number that is linked and WORKING changes nothing and reports WORKING", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      yield* session.link({ kind: "qr" })
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING", "0 WORKING"])
      assert.strictEqual(h.fake.sockets.length, 1)
      assert.isDefined(Harness.credsOf(h, 1)?.account)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a number the gateway linked whose credentials are gone is STOPPED, not silently none", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(rec.take(), ["0 STOPPED (no saved credentials for this number: link it again)"])
      assert.strictEqual(h.fake.sockets.length, 0)
    }).pipe(Effect.provide(h.layer))
  })
})

describe("Baileys driver: reconnecting", () => {
  it.scoped("a lost connection reconnects after a jittered, doubling backoff; a connection that stays up resets it", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      rec.take()
      h.fake.latest().close(428)
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING (connection lost: Connection Failure (428))"])
      // First wait: between 0.5 and 1 s.
      yield* advance(499)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(501)
      assert.strictEqual(h.fake.sockets.length, 2)
      // Second: between 1 and 2 s after the next loss.
      h.fake.latest().close(408, "Connection was lost")
      yield* flush
      yield* advance(999)
      assert.strictEqual(h.fake.sockets.length, 2)
      yield* advance(1001)
      assert.strictEqual(h.fake.sockets.length, 3)
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take(), ["1000 STARTING (connection lost: Connection was lost (408))", "3000 WORKING"])
      // Up for a minute: the next loss starts from the first wait again.
      yield* advance(60_000)
      h.fake.latest().close(503)
      yield* flush
      yield* advance(1000)
      assert.strictEqual(h.fake.sockets.length, 4)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("the restart budget spent: FAILED with the reason, no more sockets until an operator links", () => {
    const h = Harness.make({ restartBudget: 3 })
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open({ id: 1, linked: true })
      for (let i = 0; i < 4; i++) {
        h.fake.latest().close(428)
        yield* advance(60_000)
      }
      const lines = rec.take().map((l) => l.replace(/^\d+ /, ""))
      assert.deepStrictEqual(lines, [
        "STARTING",
        "STARTING (connection lost: Connection Failure (428))",
        "STARTING (connection lost: Connection Failure (428))",
        "STARTING (connection lost: Connection Failure (428))",
        "FAILED (restart budget spent after 3 reconnects: Connection Failure (428))"
      ])
      assert.strictEqual(h.fake.sockets.length, 4)
      yield* advance(3_600_000)
      assert.strictEqual(h.fake.sockets.length, 4)
      // The operator asks again: connected with the same credentials, no QR.
      yield* session.link({ kind: "qr" })
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 5)
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take().map((l) => l.replace(/^\d+ /, "")), ["STARTING", "WORKING"])
      assert.isDefined(h.fake.latest().creds.account)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("logged out from the phone (401): STOPPED, credentials and keys deleted, no reconnect", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    h.backend.rows.get(1)!.set("session/77010000009.0", "\"x\"")
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().close(401, "Connection Failure")
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING", "0 STOPPED (logged out from the phone)"])
      assert.strictEqual(h.backend.rows.get(1)?.size, 0)
      yield* advance(600_000)
      assert.strictEqual(h.fake.sockets.length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  for (
    const [code, reason] of [
      [440, "replaced by another connection of this device (440)"],
      [403, "refused by WhatsApp (403): the account may be banned"],
      [411, "multi-device mismatch (411): link the number again"]
    ] as const
  ) {
    it.scoped(`${code}: FAILED (${reason}), credentials kept, no reconnect`, () => {
      const h = Harness.make()
      Harness.storeLinked(h, 1)
      return Effect.gen(function*() {
        const { rec } = yield* Harness.open({ id: 1, linked: true })
        h.fake.latest().open()
        yield* flush
        h.fake.latest().close(code)
        yield* advance(600_000)
        assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING", `0 FAILED (${reason})`])
        assert.strictEqual(h.fake.sockets.length, 1)
        assert.isDefined(Harness.credsOf(h, 1)?.account)
      }).pipe(Effect.provide(h.layer))
    })
  }

  it.scoped("logout from the gateway: the device is removed from the phone, STOPPED, credentials deleted", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      yield* session.logout
      yield* flush
      assert.strictEqual(h.fake.latest().loggedOut, 1)
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING", "0 STOPPED (logged out)"])
      assert.strictEqual(h.backend.rows.get(1)?.size, 0)
      const sent = yield* Effect.flip(session.send({ waMessageId: "X", to: "77017654321", content: { kind: "text", text: "hi" } }))
      assert.strictEqual(sent._tag, "DriverUnavailable")
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("closing the session ends its socket; its late events reach nobody", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { close, rec } = yield* Harness.open({ id: 1, linked: true })
      const socket = h.fake.latest()
      socket.open()
      yield* flush
      yield* close
      assert.strictEqual(socket.ended, 1)
      socket.close(428)
      socket.upsert([{ key: { remoteJid: "77017654321@s.whatsapp.net", id: "LATE", fromMe: false }, message: { conversation: "x" } }])
      yield* advance(600_000)
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING"])
      assert.strictEqual(h.fake.sockets.length, 1)
    }).pipe(Effect.provide(h.layer))
  })
})

describe("Baileys driver: startup at scale", () => {
  it.scoped("at most connectConcurrency handshakes at once; a slot frees when a handshake ends or after connectSlotMs", () => {
    const h = Harness.make({ connectConcurrency: 3, connectSlotMs: 20_000 })
    for (let id = 1; id <= 7; id++) Harness.storeLinked(h, id, `7701000000${id}`)
    return Effect.gen(function*() {
      for (let id = 1; id <= 7; id++) yield* Harness.open({ id, phone: `7701000000${id}`, linked: true })
      assert.strictEqual(h.fake.sockets.length, 3)
      h.fake.sockets[0]!.open()
      h.fake.sockets[1]!.close(428)
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 5)
      // Nobody answers the rest: their slots come back after 20 s.
      yield* advance(19_999)
      assert.strictEqual(h.fake.sockets.length, 5)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 8)
    }).pipe(Effect.provide(h.layer))
  })
})
