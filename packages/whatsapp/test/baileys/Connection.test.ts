/**
 * A number's connection through the Baileys driver, on fake sockets emitting Baileys' events:
 * linking by QR and by pairing code, the status of every step, reconnecting with backoff, the
 * restart budget, logging out, and the bound on handshakes in flight.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as DisconnectPolicy from "../../src/baileys/DisconnectPolicy.js"
import * as Linking from "../../src/baileys/Linking.js"
import * as Reconnect from "../../src/baileys/Reconnect.js"
import { Closes } from "./support/FakeSocket.js"
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

  it.scoped("by code the device is announced as Chrome on an operating system (WhatsApp refuses other names); by QR under WA_DEVICE_NAME", () => {
    const h = Harness.make({ deviceName: "Acme Shop" })
    return Effect.gen(function*() {
      const { session } = yield* Harness.open()
      yield* session.link({ kind: "code" })
      yield* flush
      assert.deepStrictEqual(h.fake.latest().options.browser, ["Windows", "Chrome", "10.0.22631"])
      yield* session.link({ kind: "qr" })
      yield* flush
      assert.deepStrictEqual(h.fake.latest().options.browser, ["Acme Shop", "Chrome", "10.0.22631"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by code with WA_DEVICE_NAME an operating system WhatsApp accepts: that one", () => {
    const h = Harness.make({ deviceName: "Mac OS" })
    return Effect.gen(function*() {
      const { session } = yield* Harness.open()
      yield* session.link({ kind: "code" })
      yield* flush
      assert.deepStrictEqual(h.fake.latest().options.browser, ["Mac OS", "Chrome", "14.4.1"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by code, WhatsApp refuses the code registration (iq error 400): FAILED with its answer, not a dead code", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      rec.take()
      yield* session.link({ kind: "code" })
      yield* flush
      const socket = h.fake.latest()
      socket.qr("2@ref-1")
      yield* flush
      socket.iqError("400", "bad-request")
      yield* flush
      assert.deepStrictEqual(rec.take(), [
        "0 STARTING",
        "0 SCAN_QR_CODE code=K7PQ3XWZ",
        "0 FAILED (WhatsApp refused the pairing request (400 bad-request))"
      ])
      assert.strictEqual(socket.ended, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("an iq error on a linked number is not a linking failure", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* Harness.working(h)
      h.fake.latest().iqError("404", "item-not-found")
      yield* flush
      assert.deepStrictEqual(rec.take(), [])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("linking with no network: STARTING says WhatsApp cannot be reached and why, retries with the same identity, then FAILED with why (never 'qr refs ran out')", () => {
    const h = Harness.make({ linkRetries: 2 })
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      rec.take()
      yield* session.link({ kind: "qr" })
      yield* flush
      const identity = [...h.fake.latest().creds.noiseKey.public]
      h.fake.latest().closeWith(Closes.network("ENOTFOUND"))
      yield* advance(1_000)
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.deepStrictEqual([...h.fake.latest().creds.noiseKey.public], identity)
      h.fake.latest().closeWith(Closes.network("ENOTFOUND"))
      yield* advance(2_000)
      h.fake.latest().closeWith(Closes.network("ENOTFOUND"))
      yield* advance(600_000)
      assert.deepStrictEqual(rec.take(), [
        "0 STARTING",
        "0 STARTING (cannot reach WhatsApp (getaddrinfo ENOTFOUND web.whatsapp.com): retrying (attempt 1 of 2))",
        "1000 STARTING (cannot reach WhatsApp (getaddrinfo ENOTFOUND web.whatsapp.com): retrying (attempt 2 of 2))",
        "3000 FAILED (cannot reach WhatsApp (getaddrinfo ENOTFOUND web.whatsapp.com))"
      ])
      assert.strictEqual(h.fake.sockets.length, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("by code, the connection drops after the code was shown: a new socket and a new code, not 'pairing code expired'", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open()
      rec.take()
      yield* session.link({ kind: "code" })
      yield* flush
      h.fake.latest().qr("2@ref-1")
      yield* flush
      h.fake.latest().closeWith(Closes.timedOut())
      yield* advance(1_000)
      h.fake.latest().pairingOutcome = { _tag: "ok", value: "ABCD-EFGH" }
      h.fake.latest().qr("2@ref-9")
      yield* flush
      assert.deepStrictEqual(h.fake.latest().pairingRequests, [PHONE])
      assert.deepStrictEqual(rec.take(), [
        "0 STARTING",
        "0 SCAN_QR_CODE code=K7PQ3XWZ",
        "0 STARTING (WhatsApp did not answer in time (408): retrying (attempt 1 of 5); a new code will be shown)",
        "1000 SCAN_QR_CODE code=ABCDEFGH"
      ])
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
      h.fake.latest().closeWith(Closes.terminated())
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING (connection lost: Connection Terminated (428): reconnecting (attempt 1))"])
      // First wait: between 0.5 and 1 s.
      yield* advance(499)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(501)
      assert.strictEqual(h.fake.sockets.length, 2)
      // Second: between 1 and 2 s after the next loss.
      h.fake.latest().closeWith(Closes.keepAliveLost())
      yield* flush
      yield* advance(999)
      assert.strictEqual(h.fake.sockets.length, 2)
      yield* advance(1001)
      assert.strictEqual(h.fake.sockets.length, 3)
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take(), [
        "1000 STARTING (connection lost: connection lost: no answer to keep-alives (408): reconnecting (attempt 2))",
        "3000 WORKING"
      ])
      // Up for a minute: the next loss starts from the first wait again.
      yield* advance(60_000)
      h.fake.latest().closeWith(Closes.failure(503))
      yield* flush
      yield* advance(1000)
      assert.strictEqual(h.fake.sockets.length, 4)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("an outage of hours (no network, then 503s) never strands the number: reconnects with waits capped at 5 min, WORKING after", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      rec.take()
      // 40 losses, each followed by at most the cap (5 min): more than 3 hours without WhatsApp.
      for (let i = 0; i < 40; i++) {
        const before = h.fake.sockets.length
        h.fake.latest().closeWith(i % 2 === 0 ? Closes.network("ENOTFOUND") : Closes.failure(503))
        yield* advance(300_000)
        assert.strictEqual(h.fake.sockets.length, before + 1)
      }
      const lines = rec.take()
      assert.strictEqual(lines.length, 40)
      assert.match(lines[0]!, /STARTING \(cannot reach WhatsApp \(getaddrinfo ENOTFOUND web.whatsapp.com\): reconnecting \(attempt 1\)\)$/)
      assert.match(lines[39]!, /STARTING \(connection lost: Connection Failure \(503\): reconnecting \(attempt 40\)\)$/)
      assert.isFalse(lines.some((l) => /FAILED|STOPPED/.test(l)))
      h.fake.latest().open()
      yield* flush
      assert.match(rec.take()[0]!, / WORKING$/)
      assert.isDefined(Harness.credsOf(h, 1)?.account)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("515 once: at once; 515 on every login: backed off, not a tight loop", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      rec.take()
      h.fake.latest().closeWith(Closes.restartRequired())
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 2)
      h.fake.latest().closeWith(Closes.restartRequired())
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.deepStrictEqual(rec.take(), [
        "0 STARTING",
        "0 STARTING (WhatsApp keeps asking for a restart (515, 2 in a row): reconnecting (attempt 1))"
      ])
      yield* advance(1000)
      assert.strictEqual(h.fake.sockets.length, 3)
      h.fake.latest().open()
      yield* flush
      // Opened: the next single 515 is a normal restart again.
      h.fake.latest().closeWith(Closes.restartRequired())
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 4)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("logged out from the phone (401): STOPPED, credentials kept; a second 401 confirms it and deletes them", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    h.backend.rows.get(1)!.set("session/77010000009.0", "\"x\"")
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.failure(401, { location: "rva" }))
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING", "0 STOPPED (logged out from the phone (401))"])
      assert.isDefined(Harness.credsOf(h, 1)?.account)
      // One more try after the grace period (the longest backoff wait).
      yield* advance(299_999)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 2)
      h.fake.latest().closeWith(Closes.failure(401))
      yield* flush
      assert.deepStrictEqual(rec.take(), ["300000 STOPPED (logged out from the phone (401))"])
      assert.strictEqual(h.backend.rows.get(1)?.size, 0)
      yield* advance(3_600_000)
      assert.strictEqual(h.fake.sockets.length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a 401 that was not meant: the try after the grace period opens, WORKING with the same credentials", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.failure(401))
      yield* advance(300_000)
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take(), ["0 STARTING", "0 WORKING", "0 STOPPED (logged out from the phone (401))", "300000 WORKING"])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a 401 is stored: a session opened later (a restart, a passivation) waits for the try, made when due; a link makes a new device", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const first = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.failure(401))
      yield* advance(100_000)
      yield* first.close

      const { rec, close } = yield* Harness.open({ id: 1, linked: false })
      assert.deepStrictEqual(rec.take(), ["100000 STOPPED (logged out from the phone (401))"])
      yield* advance(199_999)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.isDefined(h.fake.latest().creds.account)
      yield* close

      // Opened after the try is due (and the try not answered): made at once.
      const late = yield* Harness.open({ id: 1, linked: false })
      assert.deepStrictEqual(late.rec.take(), ["300000 STOPPED (logged out from the phone (401))"])
      assert.strictEqual(h.fake.sockets.length, 3)
      // A link meanwhile is a new device, not the refused one.
      yield* late.session.link({ kind: "qr" })
      yield* flush
      assert.deepStrictEqual(late.rec.take(), ["300000 STARTING"])
      assert.isUndefined(h.fake.latest().creds.account)
      assert.isNull(Harness.credsOf(h, 1))
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("411 is stored: a session opened later is FAILED with the reason and opens no socket; a link makes a new device", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const first = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.failure(411))
      yield* flush
      yield* first.close

      const { rec, session } = yield* Harness.open({ id: 1, linked: true })
      yield* advance(600_000)
      assert.deepStrictEqual(rec.take(), ["0 FAILED (multi-device mismatch (411): link the number again)"])
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* session.link({ kind: "qr" })
      yield* flush
      assert.deepStrictEqual(rec.take(), ["600000 STARTING"])
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.isUndefined(h.fake.latest().creds.account)
    }).pipe(Effect.provide(h.layer))
  })

  for (
    const [code, reason] of [
      [403, "refused by WhatsApp (403): the account may be banned"],
      [406, "banned by WhatsApp (406)"]
    ] as const
  ) {
    it.scoped(`${code} is stored: a session opened later is FAILED with the reason and opens no socket; a link says why it does nothing; after an unlink a link makes a new device`, () => {
      const h = Harness.make()
      Harness.storeLinked(h, 1)
      return Effect.gen(function*() {
        const first = yield* Harness.open({ id: 1, linked: true })
        h.fake.latest().open()
        yield* flush
        h.fake.latest().closeWith(Closes.failure(code))
        yield* flush
        assert.deepStrictEqual(first.rec.take().slice(-1), [`0 FAILED (${reason})`])
        yield* first.close

        const { rec, session } = yield* Harness.open({ id: 1, linked: true })
        yield* advance(600_000)
        assert.deepStrictEqual(rec.take(), [`0 FAILED (${reason})`])
        assert.strictEqual(h.fake.sockets.length, 1)
        // Neither the refused account nor a new device of it: the link says so, and fails at once.
        const refused = yield* Effect.flip(session.link({ kind: "qr" }))
        assert.deepStrictEqual([refused._tag, refused.reason], ["LinkRefused", Linking.refusedLink(reason)])
        yield* advance(600_000)
        assert.deepStrictEqual(rec.take(), [`600000 FAILED (${Linking.refusedLink(reason)})`])
        assert.strictEqual(h.fake.sockets.length, 1)
        assert.isDefined(Harness.credsOf(h, 1)?.account)

        // The ban lifted: unlink (it tries to tell WhatsApp once), then link a new device.
        const unlinking = yield* Effect.fork(session.logout)
        yield* flush
        h.fake.latest().closeWith(Closes.failure(code))
        yield* Fiber.join(unlinking)
        rec.take()
        const sockets = h.fake.sockets.length
        yield* session.link({ kind: "qr" })
        yield* flush
        assert.deepStrictEqual(rec.take(), ["1200000 STARTING"])
        assert.strictEqual(h.fake.sockets.length, sockets + 1)
        assert.isUndefined(h.fake.latest().creds.account)
      }).pipe(Effect.provide(h.layer))
    })
  }

  const BANNED_2H = "temporarily banned by WhatsApp (402) until 1970-01-01T02:00:00.000Z; WhatsApp's reason: " +
    "too many messages to people who do not have the number in their contacts (101)"
  const banOver = Reconnect.BAN_OVER_REASON

  it.scoped("402 with its expiry is stored: FAILED until then; a session opened before it opens no socket and a link says why at once; at the end it connects by itself, and the ban is forgotten once open", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const first = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      // WhatsApp gives the ban's length in seconds: two hours.
      h.fake.latest().closeWith(Closes.failure(402, { code: "101", expire: "7200" }))
      yield* flush
      assert.deepStrictEqual(first.rec.take(), ["0 STARTING", "0 WORKING", `0 FAILED (${BANNED_2H})`])
      assert.strictEqual(JSON.parse(h.backend.rows.get(1)?.get("refused/") ?? "null")?.until, 7_200_000)
      yield* advance(1_800_000)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* first.close

      // A restart an hour into the ban: FAILED with the reason, and no socket.
      yield* advance(1_800_000)
      const { close, rec, session } = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(rec.take(), [`3600000 FAILED (${BANNED_2H})`])
      assert.strictEqual(h.fake.sockets.length, 1)
      // A link during the ban answers at once, saying why and until when; no new device either.
      const refused = yield* Effect.flip(session.link({ kind: "qr" }))
      assert.deepStrictEqual([refused._tag, refused.reason], ["LinkRefused", Linking.bannedLink(BANNED_2H)])
      assert.deepStrictEqual(rec.take(), [`3600000 FAILED (${Linking.bannedLink(BANNED_2H)})`])
      assert.strictEqual(h.fake.sockets.length, 1)
      assert.isDefined(Harness.credsOf(h, 1)?.account)

      // The ban's end: the session connects by itself, with the same device.
      yield* advance(3_599_999)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.isDefined(h.fake.latest().creds.account)
      assert.deepStrictEqual(rec.take(), [`7200000 STARTING (${banOver})`])
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take(), ["7200000 WORKING"])
      assert.isUndefined(h.backend.rows.get(1)?.get("refused/"))
      yield* close

      // Forgotten: the next session connects at once.
      const again = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(again.rec.take(), ["7200000 STARTING"])
      assert.strictEqual(h.fake.sockets.length, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("402: a session opened after the ban's end connects at once; answered with another 402, it waits for the new end", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const first = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.failure(402, { expire: "7200" }))
      yield* flush
      yield* first.close
      yield* advance(7_200_000)
      assert.strictEqual(h.fake.sockets.length, 1)

      const { rec } = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(rec.take(), [`7200000 STARTING (${banOver})`])
      assert.strictEqual(h.fake.sockets.length, 2)
      // Still banned: a new end, an hour on.
      h.fake.latest().closeWith(Closes.failure(402, { expire: "3600" }))
      yield* flush
      assert.deepStrictEqual(rec.take(), ["7200000 FAILED (temporarily banned by WhatsApp (402) until 1970-01-01T03:00:00.000Z)"])
      yield* advance(3_599_999)
      assert.strictEqual(h.fake.sockets.length, 2)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("402 without an expiry: FAILED, tried again by itself after a day, not before", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.failure(402))
      yield* flush
      assert.deepStrictEqual(rec.take().slice(-1), [
        "0 FAILED (temporarily banned by WhatsApp (402), no end given: tried again at 1970-01-02T00:00:00.000Z)"
      ])
      yield* advance(DisconnectPolicy.TEMPORARY_BAN_UNKNOWN_MS - 1)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.deepStrictEqual(rec.take(), [`86400000 STARTING (${banOver})`])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("409 bad user agent: the current version is fetched and tried once; a second 409 is FAILED saying what to do, not stored: a restart tries once more, and a link connects", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    h.fake.setLatest({ version: [2, 3000, 1000000001], isLatest: true })
    return Effect.gen(function*() {
      const first = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.setLatest({ version: [2, 3000, 1000000002], isLatest: true })
      h.fake.latest().closeWith(Closes.failure(409))
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.deepStrictEqual(h.fake.latest().options.version, [2, 3000, 1000000002])
      h.fake.latest().closeWith(Closes.failure(409))
      yield* advance(3_600_000)
      const failed = "WhatsApp refused the client's user agent (409) even after fetching the current version: " +
        "set WA_VERSION or update the gateway, then link the number (its credentials are kept)"
      assert.deepStrictEqual(first.rec.take(), [
        "0 STARTING",
        "0 WORKING",
        "0 STARTING (WhatsApp refused the client's user agent (409): fetching the current version)",
        `0 FAILED (${failed})`
      ])
      // No loop: nothing more until someone acts.
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.isUndefined(h.backend.rows.get(1)?.get("refused/"))
      // A link connects the same device again (the credentials are fine).
      yield* first.session.link({ kind: "qr" })
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 3)
      assert.isDefined(h.fake.latest().creds.account)
      h.fake.latest().closeWith(Closes.failure(409))
      yield* flush
      yield* first.close

      // A restart (a new version set, the gateway updated): connected once more.
      const again = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(again.rec.take(), ["3600000 STARTING"])
      assert.strictEqual(h.fake.sockets.length, 4)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("440 replaced: one more try 30 s later while this runner owns the number; a second 440 is FAILED", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.replaced())
      yield* advance(29_999)
      assert.strictEqual(h.fake.sockets.length, 1)
      yield* advance(1)
      assert.strictEqual(h.fake.sockets.length, 2)
      h.fake.latest().closeWith(Closes.replaced())
      yield* advance(600_000)
      assert.deepStrictEqual(rec.take(), [
        "0 STARTING",
        "0 WORKING",
        "0 STARTING (replaced by another connection of this device (440): trying once more in 30 s)",
        "30000 FAILED (replaced by another connection of this device (440))"
      ])
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.isDefined(Harness.credsOf(h, 1)?.account)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("440 and the number moves to another runner before the retry: no socket from this one", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { close } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      h.fake.latest().closeWith(Closes.replaced())
      yield* flush
      yield* close
      yield* advance(60_000)
      assert.strictEqual(h.fake.sockets.length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("405 outdated version: the current version is fetched and announced on the next socket; a second 405 is FAILED", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    h.fake.setLatest({ version: [2, 3000, 1000000001], isLatest: true })
    return Effect.gen(function*() {
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      assert.deepStrictEqual(h.fake.latest().options.version, [2, 3000, 1000000001])
      h.fake.setLatest({ version: [2, 3000, 1000000002], isLatest: true })
      h.fake.latest().closeWith(Closes.failure(405))
      yield* flush
      assert.strictEqual(h.fake.sockets.length, 2)
      assert.deepStrictEqual(h.fake.latest().options.version, [2, 3000, 1000000002])
      assert.strictEqual(h.backend.values.get("wa_web_version"), "2.3000.1000000002")
      h.fake.latest().closeWith(Closes.failure(405))
      yield* advance(600_000)
      assert.deepStrictEqual(rec.take(), [
        "0 STARTING",
        "0 STARTING (WhatsApp rejected the client version (405): fetching the current one)",
        "0 FAILED (WhatsApp rejected the client version (405) even after fetching the current one)"
      ])
      assert.strictEqual(h.fake.sockets.length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  for (
    const [error, reason] of [
      [Closes.failure(403), "refused by WhatsApp (403): the account may be banned"],
      [Closes.failure(406), "banned by WhatsApp (406)"],
      [Closes.failure(411), "multi-device mismatch (411): link the number again"]
    ] as const
  ) {
    it.scoped(`${DisconnectPolicy.codeOf(error)}: FAILED (${reason}), credentials kept, no reconnect`, () => {
      const h = Harness.make()
      Harness.storeLinked(h, 1)
      return Effect.gen(function*() {
        const { rec } = yield* Harness.open({ id: 1, linked: true })
        h.fake.latest().open()
        yield* flush
        h.fake.latest().closeWith(error)
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

  it.scoped("logout while not connected: a connection of its own removes the device from the phone, then STOPPED", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().open()
      yield* flush
      // The connection is lost: waiting to reconnect.
      h.fake.latest().close(428, "Connection Closed")
      yield* flush
      const before = h.fake.sockets.length
      const done = yield* Effect.fork(session.logout)
      yield* flush
      assert.strictEqual(h.fake.sockets.length, before + 1)
      h.fake.latest().open()
      yield* flush
      yield* Fiber.join(done)
      assert.deepStrictEqual([h.fake.latest().loggedOut, h.fake.latest().ended], [1, 1])
      assert.deepStrictEqual(rec.take().slice(-1), ["0 STOPPED (logged out)"])
      assert.strictEqual(h.backend.rows.get(1)?.size, 0)
      // Nothing reconnects afterwards.
      yield* advance(600_000)
      assert.strictEqual(h.fake.sockets.length, before + 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("logout while WhatsApp cannot be reached: credentials deleted all the same, STOPPED says to remove the device on the phone", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      const { rec, session } = yield* Harness.open({ id: 1, linked: true })
      h.fake.latest().closeWith(Closes.network())
      yield* flush
      const done = yield* Effect.fork(session.logout)
      yield* flush
      // The connection made to say goodbye never opens.
      yield* advance(6_000)
      yield* Fiber.join(done)
      assert.strictEqual(h.fake.latest().loggedOut, 0)
      const [last] = rec.take().slice(-1)
      assert.match(last!, /STOPPED \(logged out here, but WhatsApp could not be reached to remove the device \(no answer within 6000 ms\)\: remove it on the phone under Linked devices\)$/)
      assert.strictEqual(h.backend.rows.get(1)?.size, 0)
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
