/**
 * POST /messages/send through HTTP, against the number entities on a real cluster runner and
 * the simulated network: every error code at its moment, the X-RateLimit-* and Retry-After
 * headers, idempotency, and what reaches the network. The number entities' clock is driven by
 * the test (ManualClock), never by sleeping.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Almaty from "@wagate/domain/Almaty"
import type { Hooks } from "@wagate/numbers/NumberHooks"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FileServer from "../support/FileServer.js"
import { eventually, linked, provision, type Provisioned, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import {
  freshDatabase,
  type GatewayOptions,
  type RunningGateway,
  simulatedNetwork,
  startGateway,
  stoppable
} from "../support/TestGateway.js"

/** 12:00 in Almaty on a Monday; the number is linked at this moment. */
const NOON = Date.parse("2026-11-23T07:00:00.000Z")

const world = (options: GatewayOptions & { readonly numbers?: number } = {}) =>
  Effect.gen(function*() {
    const time = ManualClock.make(NOON)
    const gateway = yield* startGateway(yield* freshDatabase, { domainClock: time.clock, ...options })
    yield* gateway.sim.updateConfig({ deliveredDelayMs: 20, readDelayMs: 40 })
    const acme = yield* provision(gateway.ops, { numbers: options.numbers ?? 1 })
    return { gateway, time, acme }
  })

interface Answer {
  readonly status: number
  readonly body: any
  readonly headers: Record<string, string>
}

/** POSTs a send with the account key (or `key`), returning status, body and headers. */
const send = (gateway: RunningGateway, key: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.execute(
      HttpClientRequest.post("/api/v1/messages/send").pipe(
        HttpClientRequest.setHeaders({ authorization: `Bearer ${key}`, ...headers }),
        typeof body === "string" ? HttpClientRequest.bodyText(body, "application/json") : HttpClientRequest.bodyUnsafeJson(body)
      )
    )
    return { status: response.status, body: yield* response.json, headers: response.headers } as Answer
  })

const code = (a: Answer) => `${a.status} ${a.body.code ?? "ok"}`

/** A peer that wrote first, so messages to it are replies, not first contacts. */
const peerWhoWrote = (gateway: RunningGateway, acme: Provisioned, n = 0) =>
  Effect.gen(function*() {
    const peer = uniquePhone()
    yield* gateway.sim.inbound({ to: acme.numbers[n].phone, from: peer, text: "Hello, do you deliver?" })
    const api = yield* gateway.client(acme.accountKey)
    for (let i = 0; i < 100; i++) {
      const { messages } = yield* api.messages.list({ urlParams: { chat: peer } })
      if (messages.length > 0) return peer
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.dieMessage("the incoming message was not stored")
  })

describe("POST /messages/send", () => {
  it.scopedLive("sends a text: {ok, id, wa_message_id, from}, X-RateLimit-* headers, the message reaches the network", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const to = uniquePhone()
      const answer = yield* send(gateway, acme.accountKey, { to: `+${to}`, text: "Your order is ready" })
      assert.strictEqual(answer.status, 200)
      assert.deepStrictEqual(Object.keys(answer.body).sort(), ["from", "id", "ok", "wa_message_id"])
      assert.strictEqual(answer.body.ok, true)
      assert.deepStrictEqual(answer.body.from, { id: acme.numbers[0].id, phone: acme.numbers[0].phone })
      // Warm-up (first 3 days): 200 messages a day; one used.
      assert.strictEqual(answer.headers["x-ratelimit-limit"], "200")
      assert.strictEqual(answer.headers["x-ratelimit-remaining"], "199")
      assert.strictEqual(answer.headers["x-ratelimit-reset"], String(Almaty.nextMidnight(NOON) / 1000))
      const sent = yield* gateway.sim.sent({ to })
      assert.deepStrictEqual(sent.map((m) => [m.from, m.kind, m.text, m.waMessageId]), [
        [acme.numbers[0].phone, "text", "Your order is ready", answer.body.wa_message_id]
      ])
      // The message is in the history, and its status follows the network's acks.
      const api = yield* gateway.client(acme.accountKey)
      let status = ""
      for (let i = 0; i < 100 && status !== "read"; i++) {
        status = (yield* api.messages.get({ path: { id: answer.body.id } })).status
        if (status !== "read") yield* Effect.sleep("10 millis")
      }
      assert.strictEqual(status, "read")
      const stored = yield* api.messages.get({ path: { id: answer.body.id } })
      assert.deepStrictEqual([stored.direction, stored.source, stored.peer, stored.chat_id, stored.type], [
        "out",
        "api",
        to,
        `${to}@c.us`,
        "text"
      ])
    }))

  it.scopedLive("400: invalid_json, invalid_to, empty_text, text_too_long, invalid_media, invalid_param", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const to = uniquePhone()
      const cases: Array<[unknown, string]> = [
        ["{", "400 invalid_json"],
        ["[1]", "400 invalid_json"],
        [{ text: "no recipient" }, "400 invalid_to"],
        [{ to: "hello", text: "x" }, "400 invalid_to"],
        [{ to: "123", text: "x" }, "400 invalid_to"],
        [{ to }, "400 empty_text"],
        [{ to, text: "   " }, "400 empty_text"],
        [{ to, text: "x".repeat(4097) }, "400 text_too_long"],
        [{ to, image: { url: "http://x/a.png", caption: "c".repeat(1025) } }, "400 text_too_long"],
        [{ to, image: "http://x/a.png" }, "400 invalid_media"],
        [{ to, image: { url: "ftp://x/a.png" } }, "400 invalid_media"],
        [{ to, image: { url: "not a url" } }, "400 invalid_media"],
        [{ to, image: { url: "http://x/a.png" }, video: { url: "http://x/b.mp4" } }, "400 invalid_media"],
        [{ to, text: 5 }, "400 invalid_param"],
        // The contract's schema decides the shape: `to` is a string, and the first problem in
        // fixing order is the one reported.
        [{ to: Number(to), text: "x" }, "400 invalid_to"],
        [{ to: "hello", image: "http://x/a.png", text: 5 }, "400 invalid_to"],
        [{ to, image: { url: "http://x/a.png", caption: 5 } }, "400 invalid_media"],
        [{ to, document: { url: "http://x/a.pdf", filename: ["a"] }, text: 5 }, "400 invalid_media"],
        [{ to, text: null }, "400 empty_text"],
        [{ to, text: "x", from: 1.5 }, "400 invalid_from"],
        // `from` of any wrong type is invalid_from, as on every endpoint (docs/errors.md).
        [{ to, text: "x", from: { id: 1 } }, "400 invalid_from"],
        [{ to, text: "x", from: true }, "400 invalid_from"],
        [{ to, text: "x", from: null }, "400 invalid_from"],
        [{ to, text: "x", from: ["1"] }, "400 invalid_from"],
        // A voice note has no caption: text beside it is refused, not dropped.
        [{ to, voice: { url: "http://x/a.ogg" }, text: "THIS TEXT IS DROPPED?" }, "400 invalid_param"],
        [{ to, voice: { url: "http://x/a.ogg" }, text: "x".repeat(20_000) }, "400 invalid_param"],
        [{ to, voice: { url: "http://x/a.ogg", caption: "listen" } }, "400 invalid_param"],
        // Text beside an attachment's own caption: one of the two would be dropped.
        [{ to, image: { url: "http://x/a.png", caption: "CAP" }, text: "TEXT" }, "400 invalid_param"],
        [{ to, video: { url: "http://x/a.mp4", caption: "CAP" }, text: "TEXT" }, "400 invalid_param"],
        [{ to, document: { url: "http://x/a.pdf", caption: "CAP" }, text: "TEXT" }, "400 invalid_param"]
      ]
      for (const [body, expected] of cases) {
        const answer = yield* send(gateway, acme.accountKey, body)
        assert.strictEqual(code(answer), expected, JSON.stringify(body).slice(0, 80))
        assert.deepStrictEqual(Object.keys(answer.body).sort(), ["code", "error"])
      }
      const voice = yield* send(gateway, acme.accountKey, { to, voice: { url: "http://x/a.ogg" }, text: "hello" })
      assert.match(voice.body.error, /voice note carries no text or caption/)
      // Exactly 4096 characters is allowed; a null attachment is no attachment.
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x".repeat(4096), image: null })), "200 ok")
      assert.strictEqual((yield* gateway.sim.sent()).length, 1)
    }))

  it.scopedLive("a Kazakh or Russian number written the domestic way (8 7xx, 8 9xx) is refused with the number to write", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world()
      const withCode = "with the country code it is 77011234567"
      for (const to of ["8 701 123 45 67", "87011234567", "8(701)123-45-67"]) {
        const refused = yield* send(gateway, acme.accountKey, { to, text: "Your order is ready" })
        assert.strictEqual(code(refused), "400 invalid_to", to)
        assert.include(refused.body.error, withCode)
      }
      const russian = yield* send(gateway, acme.accountKey, { to: "8 916 123 45 67", text: "x" })
      assert.include(russian.body.error, "with the country code it is 79161234567")
      const check = yield* gateway.http.execute(
        HttpClientRequest.post("/api/v1/contacts/check").pipe(
          HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}` }),
          HttpClientRequest.bodyUnsafeJson({ phone: "87011234567" })
        )
      )
      const checked: any = yield* check.json
      assert.deepStrictEqual([check.status, checked.code], [400, "invalid_param"])
      assert.include(checked.error, withCode)
      const added = yield* Effect.flip(
        gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone: "8 701 123 45 67" } })
      )
      assert.strictEqual((added as any).code, "invalid_param")
      assert.include((added as any).error, withCode)
      assert.deepStrictEqual(yield* gateway.sim.sent(), [])
      // Other 11-digit numbers starting with 8 are international ones: a Tokyo landline (+81 3).
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: "81312345678", text: "x" })), "200 ok")
    }))

  it.scopedLive("from: invalid_from, from_required, number_not_found, no_numbers; a number key sends from its number", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world({ numbers: 2 })
      const other = yield* provision(gateway.ops)
      const empty = yield* provision(gateway.ops, { numbers: 0 })
      const to = uniquePhone()
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x" })), "400 from_required")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x", from: "abc" })), "400 invalid_from")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x", from: other.numbers[0].id })), "404 number_not_found")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x", from: 999_999 })), "404 number_not_found")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x", from: String(other.numbers[0].id) })), "404 number_not_found")
      assert.strictEqual(code(yield* send(gateway, empty.accountKey, { to, text: "x" })), "409 no_numbers")
      const byPhone = yield* send(gateway, acme.accountKey, { to, text: "x", from: acme.numbers[1].phone })
      assert.deepStrictEqual([byPhone.status, byPhone.body.from.id], [200, acme.numbers[1].id])
      const byKey = yield* send(gateway, acme.numberKeys[0], { to: uniquePhone(), text: "x" })
      assert.deepStrictEqual([byKey.status, byKey.body.from.id], [200, acme.numbers[0].id])
      assert.strictEqual(code(yield* send(gateway, acme.numberKeys[0], { to, text: "x", from: acme.numbers[1].id })), "404 number_not_found")
    }))

  it.scopedLive("from with a leading zero is no number id: invalid_from, nothing sent; \"12\", 12 and a phone still name their number", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world({ numbers: 2 })
      const [n1, n2] = acme.numbers
      for (const from of [`0${n1.id}`, `00${n1.id}`, ` 0${n1.id}`]) {
        const refused = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "x", from })
        assert.deepStrictEqual([refused.status, refused.body.code], [400, "invalid_from"], `from=${JSON.stringify(from)}`)
      }
      assert.strictEqual((yield* gateway.sim.sent()).length, 0)
      const byString = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "x", from: String(n1.id) })
      assert.deepStrictEqual([byString.status, byString.body.from.id], [200, n1.id])
      // Past the second between a number's sends and the 5 s between first messages.
      time.adjust("6 seconds")
      const byNumber = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "x", from: n1.id })
      assert.deepStrictEqual([byNumber.status, byNumber.body.from.id], [200, n1.id])
      const byPhone = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "x", from: n2.phone })
      assert.deepStrictEqual([byPhone.status, byPhone.body.from.id], [200, n2.id])
    }))

  it.scopedLive("402 number_paused, 409 not_connected, 502 send_failed", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world({ numbers: 2 })
      const [n1, n2] = acme.numbers
      const to = uniquePhone()
      yield* gateway.ops.ops.pause({ path: { id: n1.id }, payload: { paused: true } })
      // Paused by hand with money on the account: the answer says so, not that the balance ran out.
      const paused = yield* send(gateway, acme.accountKey, { to, text: "x", from: n1.id })
      assert.deepStrictEqual([code(paused), paused.body.error], ["402 number_paused", "The number is paused by the operator"])
      yield* gateway.ops.ops.pause({ path: { id: n1.id }, payload: { paused: false } })
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x", from: n1.id })), "200 ok")

      yield* gateway.sim.disconnect(n2.phone, "logged_out")
      yield* linked(gateway.ops, n2.id, "STOPPED")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, text: "x", from: n2.id })), "409 not_connected")

      const refusing = uniquePhone()
      yield* gateway.sim.failures(refusing, { mode: "reject", times: 1 })
      time.adjust("5 seconds")
      const failed = yield* send(gateway, acme.accountKey, { to: refusing, text: "x", from: n1.id })
      assert.strictEqual(code(failed), "502 send_failed")
      const api = yield* gateway.client(acme.accountKey)
      const [stored] = (yield* api.messages.list({ urlParams: { chat: refusing } })).messages
      assert.deepStrictEqual([stored.status, typeof stored.error], ["failed", "string"])
      // A message the network refused does not count against the day.
      const limits = yield* api.limits.get({ urlParams: { from: String(n1.id) } })
      assert.deepStrictEqual([limits.used.messages, limits.used.new_contacts], [1, 1])
    }))

  it.scopedLive("an idempotent replay carries the X-RateLimit-* headers of the number as it is now", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const key = acme.numberKeys[0]
      const body = { to: uniquePhone(), text: "Order 7 confirmed" }
      const first = yield* send(gateway, key, body, { "idempotency-key": "order-7" })
      assert.deepStrictEqual([first.status, first.headers["x-ratelimit-remaining"]], [200, "199"])
      time.adjust("5 seconds")
      assert.strictEqual(code(yield* send(gateway, key, { to: uniquePhone(), text: "Order 8 confirmed" })), "200 ok")
      time.adjust("5 seconds")
      const replay = yield* send(gateway, key, body, { "idempotency-key": "order-7" })
      assert.deepStrictEqual([replay.status, replay.body, replay.headers["idempotent-replayed"]], [200, first.body, "true"])
      assert.deepStrictEqual(
        [replay.headers["x-ratelimit-limit"], replay.headers["x-ratelimit-remaining"], replay.headers["x-ratelimit-reset"]],
        ["200", "198", String(Almaty.nextMidnight(NOON) / 1000)]
      )
    }))

  it.scopedLive("429 rate_limited: 1 a second, Retry-After 1; a first message 5 s after the last one, Retry-After the rest", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const peer = yield* peerWhoWrote(gateway, acme)
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: peer, text: "one" })), "200 ok")
      const fast = yield* send(gateway, acme.accountKey, { to: peer, text: "two" })
      assert.strictEqual(code(fast), "429 rate_limited")
      assert.strictEqual(fast.headers["retry-after"], "1")
      assert.strictEqual(fast.headers["x-ratelimit-remaining"], "199")
      time.adjust("1 second")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: peer, text: "two" })), "200 ok")

      time.adjust("1 second")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hi" })), "200 ok")
      time.adjust("1500 millis")
      const second = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hi" })
      assert.strictEqual(code(second), "429 rate_limited")
      assert.strictEqual(second.headers["retry-after"], "4")
      // Replies are not first messages.
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: peer, text: "three" })), "200 ok")
      time.adjust("3500 millis")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hi" })), "200 ok")
    }))

  it.scopedLive("429 daily_limit until midnight in Almaty; the next day the counters start again", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const peer = yield* peerWhoWrote(gateway, acme)
      for (let i = 0; i < 200; i++) {
        const answer = yield* send(gateway, acme.accountKey, { to: peer, text: `update ${i}` })
        assert.strictEqual(answer.status, 200)
        time.adjust("1 second")
      }
      const refused = yield* send(gateway, acme.accountKey, { to: peer, text: "one too many" })
      assert.strictEqual(code(refused), "429 daily_limit")
      const now = time.now()
      assert.strictEqual(refused.headers["retry-after"], String(Almaty.secondsToMidnight(now)))
      assert.deepStrictEqual(
        [refused.headers["x-ratelimit-limit"], refused.headers["x-ratelimit-remaining"], refused.headers["x-ratelimit-reset"]],
        ["200", "0", String(Almaty.nextMidnight(now) / 1000)]
      )
      time.set(Almaty.nextMidnight(now) + 1000)
      const tomorrow = yield* send(gateway, acme.accountKey, { to: peer, text: "good morning" })
      assert.deepStrictEqual([tomorrow.status, tomorrow.headers["x-ratelimit-remaining"]], [200, "199"])
    }), { timeout: 120_000 })

  it.scopedLive("429 new_contacts_limit: 30 first messages a day in warm-up; replies still go", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const peer = yield* peerWhoWrote(gateway, acme)
      for (let i = 0; i < 30; i++) {
        assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: `offer number ${i}` })), "200 ok")
        time.adjust("5 seconds")
      }
      const refused = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "offer 31" })
      assert.strictEqual(code(refused), "429 new_contacts_limit")
      assert.strictEqual(refused.headers["retry-after"], String(Almaty.secondsToMidnight(time.now())))
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: peer, text: "still here" })), "200 ok")
    }), { timeout: 60_000 })

  it.scopedLive("429 spam_detected for the same text to a 25th new person in an hour, then cold_blocked for 24 h; replies stay allowed", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const peer = yield* peerWhoWrote(gateway, acme)
      // After warm-up: 150 first messages a day, so only the mailing rule can stop this.
      time.adjust("4 days")
      for (let i = 0; i < 24; i++) {
        const answer = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "BIG SALE today only!" })
        assert.strictEqual(answer.status, 200, `send ${i}`)
        time.adjust("5 seconds")
      }
      const spam = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "big sale, today only" })
      assert.strictEqual(code(spam), "429 spam_detected")
      assert.strictEqual(spam.headers["retry-after"], "86400")
      assert.isDefined(spam.headers["x-ratelimit-reset"])
      time.adjust("10 seconds")
      const blocked = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "something else" })
      assert.strictEqual(code(blocked), "429 cold_blocked")
      assert.strictEqual(blocked.headers["retry-after"], String(86_400 - 10))
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: peer, text: "your parcel left" })), "200 ok")
      const api = yield* gateway.client(acme.accountKey)
      const limits = yield* api.limits.get({ urlParams: {} })
      assert.strictEqual(limits.cold_blocked_until, new Date(time.now() - 10_000 + 86_400_000).toISOString())
      time.adjust("24 hours")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hello again" })), "200 ok")
      assert.isNull((yield* api.limits.get({ urlParams: {} })).cold_blocked_until)
    }), { timeout: 60_000 })

  it.scopedLive("40 new contacts within an hour are a mailing too, whatever the texts", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      time.adjust("4 days")
      for (let i = 0; i < 39; i++) {
        assert.strictEqual((yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: `personal note ${i} for you` })).status, 200)
        time.adjust("5 seconds")
      }
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "note 40" })), "429 spam_detected")
    }), { timeout: 60_000 })

  it.scopedLive("a restriction by the network (error 463) closes first messages until it ends; replies still go", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const peer = yield* peerWhoWrote(gateway, acme)
      yield* gateway.sim.restrict(acme.numbers[0].phone, { reason: "463: account restricted", until: time.now() + 2 * 3_600_000 })
      const api = yield* gateway.client(acme.accountKey)
      let limits = yield* api.limits.get({ urlParams: {} })
      for (let i = 0; i < 100 && limits.limits.new_contacts_per_day !== 0; i++) {
        yield* Effect.sleep("10 millis")
        limits = yield* api.limits.get({ urlParams: {} })
      }
      assert.strictEqual(limits.limits.new_contacts_per_day, 0)
      const refused = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hello" })
      assert.deepStrictEqual([code(refused), refused.headers["retry-after"]], ["429 new_contacts_limit", "7200"])
      assert.match(refused.body.error, /restricted/)
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: peer, text: "we are here" })), "200 ok")
      time.adjust("2 hours")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hello" })), "200 ok")
    }))

  it.scopedLive("attachments: image, document, voice and video go to the network with their bytes", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const { acme, gateway, time } = yield* world()
      const to = yield* peerWhoWrote(gateway, acme)
      const cases = [
        [{ image: { url: files.url("/image.png"), caption: "Your receipt" } }, "image", "image/png", FileServer.PNG.length],
        [{ document: { url: files.url("/report.pdf"), filename: "Invoice 42.pdf" } }, "document", "application/pdf", FileServer.PDF.length],
        [{ voice: { url: files.url("/voice.ogg") } }, "voice", "audio/ogg", FileServer.OGG.length],
        [{ video: { url: files.url("/clip.mp4") }, text: "caption from text" }, "video", "video/mp4", FileServer.MP4.length]
      ] as const
      for (const [content, kind] of cases) {
        const answer = yield* send(gateway, acme.accountKey, { to, ...content })
        assert.strictEqual(answer.status, 200, kind)
        time.adjust("1 second")
      }
      const sent = yield* gateway.sim.sent({ to })
      assert.deepStrictEqual(sent.map((m) => [m.kind, m.mimeType, m.mediaSize]), cases.map((c) => [c[1], c[2], c[3]]))
      assert.deepStrictEqual(sent.map((m) => m.caption), ["Your receipt", null, null, "caption from text"])
      assert.strictEqual(sent[1].filename, "Invoice 42.pdf")
      const api = yield* gateway.client(acme.accountKey)
      const [video, voice, doc, image] = (yield* api.messages.list({ urlParams: { chat: to, direction: "out" } })).messages
      assert.deepStrictEqual([image.type, image.media?.kind, image.media?.mime_type, image.text], ["image", "photo", "image/png", "Your receipt"])
      assert.deepStrictEqual([doc.media?.filename, voice.media?.kind, video.media?.size], ["Invoice 42.pdf", "voice", FileServer.MP4.length])
    }))

  it.scopedLive("attachments: media_fetch_failed, media_too_large, invalid_media by content", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const { acme, gateway } = yield* world()
      const to = uniquePhone()
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, image: { url: files.url("/missing.png") } })), "400 media_fetch_failed")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, image: { url: "http://127.0.0.1:1/a.png" } })), "400 media_fetch_failed")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, image: { url: files.url("/huge.png") } })), "400 media_too_large")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to, image: { url: files.url("/page.html") } })), "400 invalid_media")
      assert.strictEqual((yield* gateway.sim.sent()).length, 0)
      // None of them was recorded or counted.
      const api = yield* gateway.client(acme.accountKey)
      assert.strictEqual((yield* api.messages.list({ urlParams: {} })).messages.filter((m) => m.direction === "out").length, 0)
      assert.strictEqual((yield* api.limits.get({ urlParams: {} })).used.messages, 0)
    }))

  it.scopedLive("attachments: the file's bytes decide its type, not the server's Content-Type", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const { acme, gateway } = yield* world()
      const to = yield* peerWhoWrote(gateway, acme)
      // Served as image/jpeg, the bytes are a PNG: it goes out as the PNG it is.
      const png = yield* send(gateway, acme.accountKey, { to, image: { url: files.url("/photo.jpg") } })
      assert.strictEqual(code(png), "200 ok")
      const api = yield* gateway.client(acme.accountKey)
      const stored = yield* api.messages.get({ path: { id: png.body.id } })
      assert.deepStrictEqual([stored.type, stored.media?.mime_type, stored.media?.size], ["image", "image/png", FileServer.PNG.length])
      // Served as image/jpeg, the bytes are a login page: refused, nothing sent, nothing recorded.
      const page = yield* send(gateway, acme.accountKey, { to, image: { url: files.url("/login.jpg") } })
      assert.strictEqual(code(page), "400 invalid_media")
      assert.strictEqual(
        page.body.error,
        "Expected an image (JPEG, PNG or WebP); the server said image/jpeg, but the file is an HTML page"
      )
      const sent = yield* gateway.sim.sent({ to })
      assert.deepStrictEqual(sent.map((m) => [m.kind, m.mimeType, m.mediaSize]), [["image", "image/png", FileServer.PNG.length]])
      const out = (yield* api.messages.list({ urlParams: { chat: to, direction: "out" } })).messages
      assert.deepStrictEqual(out.map((m) => m.id), [png.body.id])
    }))

  it.scopedLive("429 attachments_busy with two attachments in flight on the account", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const { acme, gateway } = yield* world({ numbers: 3 })
      const slow = (from: number) => send(gateway, acme.accountKey, { to: uniquePhone(), image: { url: files.url("/slow.png") }, from })
      const first = yield* Effect.fork(slow(acme.numbers[0].id))
      const second = yield* Effect.fork(slow(acme.numbers[1].id))
      while (files.held() < 2) yield* Effect.sleep("5 millis")
      const busy = yield* slow(acme.numbers[2].id)
      assert.strictEqual(code(busy), "429 attachments_busy")
      assert.isDefined(busy.headers["retry-after"])
      // Text is not an attachment.
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "x", from: acme.numbers[2].id })), "200 ok")
      files.release()
      assert.deepStrictEqual([code(yield* Fiber.join(first)), code(yield* Fiber.join(second))], ["200 ok", "200 ok"])
      // Like every 429 of a send, with the number's allowance (it had sent nothing yet).
      assert.deepStrictEqual(
        [busy.headers["x-ratelimit-limit"], busy.headers["x-ratelimit-remaining"], busy.headers["x-ratelimit-reset"]],
        ["200", "200", String(Almaty.nextMidnight(NOON) / 1000)]
      )
    }), { timeout: 30_000 })

  it.scopedLive("503 busy when the gateway's downloads are all taken", () =>
    Effect.gen(function*() {
      const files = yield* FileServer.start
      const { acme, gateway } = yield* world({ fetcher: { maxConcurrent: 1 } })
      const other = yield* provision(gateway.ops)
      const held = yield* Effect.fork(send(gateway, acme.accountKey, { to: uniquePhone(), image: { url: files.url("/slow.png") } }))
      while (files.held() < 1) yield* Effect.sleep("5 millis")
      const busy = yield* send(gateway, other.accountKey, { to: uniquePhone(), image: { url: files.url("/image.png") } })
      assert.strictEqual(code(busy), "503 busy")
      assert.strictEqual(busy.headers["retry-after"], "5")
      files.release()
      assert.strictEqual(code(yield* Fiber.join(held)), "200 ok")
    }), { timeout: 30_000 })
})

describe("limits across refusals, pauses and restarts", () => {
  it.scopedLive("a paused number hands nothing it queued to the network, after a restart too, and sends it once resumed", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const sim = Context.get(network, SimNetwork)
      // A number whose connection is lost stays offline until the restart.
      yield* sim.updateConfig({ reconnectDelayMs: 86_400_000 })
      const time = ManualClock.make(NOON)
      let offline = ""
      const numberHooks: Hooks = {
        onSend: () => Effect.void,
        afterRecord: ({ text }) => text === "queued" ? Effect.orDie(sim.disconnect(offline, "connection_lost")) : Effect.void
      }
      const options = { sim: network, domainClock: time.clock, numberHooks }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops)
      const number = acme.numbers[0]!
      offline = number.phone
      const peer = uniquePhone()
      // Accepted, but the connection dropped before the network took it: it waits, pending.
      const queued = yield* send(first, acme.accountKey, { to: peer, text: "queued" })
      assert.strictEqual(code(queued), "200 ok")
      yield* first.ops.ops.pause({ path: { id: number.id }, payload: { paused: true } })
      yield* first.stop

      // Connected again after a restart, still paused: the message stays where it was.
      const second = yield* startGateway(database, options)
      yield* linked(second.ops, number.id)
      const api = yield* second.client(acme.accountKey)
      const deadline = Date.now() + 2_000
      while (Date.now() < deadline) {
        assert.strictEqual((yield* sim.sent({ to: peer })).length, 0)
        assert.strictEqual((yield* api.messages.get({ path: { id: queued.body.id } })).status, "pending")
        yield* Effect.sleep("50 millis")
      }

      // Resumed: it goes out at once (not at the next sweep), under its id, once.
      yield* second.ops.ops.pause({ path: { id: number.id }, payload: { paused: false } })
      const out = yield* eventually(sim.sent({ to: peer }), (sent) => sent.length > 0, 5_000)
      assert.deepStrictEqual(out.map((m) => m.waMessageId), [queued.body.wa_message_id])
      yield* eventually(api.messages.get({ path: { id: queued.body.id } }), (m) => m.status !== "pending")
    }), { timeout: 60_000 })

  it.scopedLive("a first message the network refused leaves the person a new contact, after a restart too", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const time = ManualClock.make(NOON)
      const first = yield* stoppable(startGateway(database, { sim: network, domainClock: time.clock }))
      const acme = yield* provision(first.ops)
      const newContacts = (gateway: RunningGateway) =>
        Effect.flatMap(gateway.client(acme.accountKey), (api) => api.limits.get({ urlParams: {} })).pipe(
          Effect.map((limits) => limits.used.new_contacts)
        )
      const [refused, refusedBeforeRestart] = [uniquePhone(), uniquePhone()]
      for (const to of [refused, refusedBeforeRestart]) {
        yield* first.sim.failures(to, { mode: "reject", times: 1 })
        assert.strictEqual(code(yield* send(first, acme.accountKey, { to, text: "Hello from the shop" })), "502 send_failed")
        time.adjust("5 seconds")
      }
      assert.strictEqual(yield* newContacts(first), 0)
      // Delivered this time, it is the first message to a new person: counted, and spaced as one.
      assert.strictEqual(code(yield* send(first, acme.accountKey, { to: refused, text: "Hello from the shop" })), "200 ok")
      assert.strictEqual(yield* newContacts(first), 1)
      // A person who wrote stays known when a reply to them is refused.
      const peer = yield* peerWhoWrote(first, acme)
      yield* first.sim.failures(peer, { mode: "reject", times: 1 })
      time.adjust("1 second")
      assert.strictEqual(code(yield* send(first, acme.accountKey, { to: peer, text: "Yes, we do" })), "502 send_failed")
      yield* first.stop

      const second = yield* startGateway(database, { sim: network, domainClock: time.clock })
      time.adjust("1 second")
      assert.strictEqual(code(yield* send(second, acme.accountKey, { to: peer, text: "Yes, we do" })), "200 ok")
      assert.strictEqual(yield* newContacts(second), 1)
      time.adjust("1 second")
      const tooSoon = yield* send(second, acme.accountKey, { to: refusedBeforeRestart, text: "Hello from the shop" })
      assert.deepStrictEqual([code(tooSoon), tooSoon.headers["retry-after"]], ["429 rate_limited", "2"])
      time.adjust("2 seconds")
      assert.strictEqual(code(yield* send(second, acme.accountKey, { to: refusedBeforeRestart, text: "Hello from the shop" })), "200 ok")
      assert.strictEqual(yield* newContacts(second), 2)
    }), { timeout: 60_000 })

  it.scopedLive("a first message and one sent while it was on its way, both refused, leave the person a new contact, after a restart too", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const time = ManualClock.make(NOON)
      // Each of these waits, recorded and not yet handed to the network, until the test lets it go.
      const held = new Map<string, { readonly recorded: Deferred.Deferred<void>; readonly go: Deferred.Deferred<void> }>()
      for (const text of ["first 0", "second 0", "first 1", "second 1"]) {
        held.set(text, { recorded: yield* Deferred.make<void>(), go: yield* Deferred.make<void>() })
      }
      const numberHooks: Hooks = {
        onSend: () => Effect.void,
        afterRecord: ({ text }) => {
          const hold = held.get(text)
          return hold === undefined ? Effect.void : Effect.zipRight(Deferred.succeed(hold.recorded, undefined), Deferred.await(hold.go))
        }
      }
      const options = { sim: network, domainClock: time.clock, numberHooks }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops)
      const newContacts = (gateway: RunningGateway) =>
        Effect.flatMap(gateway.client(acme.accountKey), (api) => api.limits.get({ urlParams: {} })).pipe(
          Effect.map((limits) => limits.used.new_contacts)
        )
      // The first message to `to`, and a second one (no first message: the person has a message
      // on its way) while the first waits; the network refuses the first, then the second.
      const bothRefused = (to: string, i: number) =>
        Effect.gen(function*() {
          const [firstHeld, secondHeld] = [held.get(`first ${i}`)!, held.get(`second ${i}`)!]
          yield* first.sim.failures(to, { mode: "reject", times: 2 })
          const firstSend = yield* Effect.fork(send(first, acme.accountKey, { to, text: `first ${i}` }))
          yield* Deferred.await(firstHeld.recorded)
          time.adjust("1 second")
          const secondSend = yield* Effect.fork(send(first, acme.accountKey, { to, text: `second ${i}` }))
          yield* Deferred.await(secondHeld.recorded)
          yield* Deferred.succeed(firstHeld.go, undefined)
          assert.strictEqual(code(yield* Fiber.join(firstSend)), "502 send_failed")
          yield* Deferred.succeed(secondHeld.go, undefined)
          assert.strictEqual(code(yield* Fiber.join(secondSend)), "502 send_failed")
          time.adjust("5 seconds")
        })
      const [person, personAfterRestart] = [uniquePhone(), uniquePhone()]
      yield* bothRefused(person, 0)
      yield* bothRefused(personAfterRestart, 1)
      assert.strictEqual(yield* newContacts(first), 0)
      // Nothing to or from the person was accepted: the next message is a first message, counted.
      assert.strictEqual(code(yield* send(first, acme.accountKey, { to: person, text: "Hello from the shop" })), "200 ok")
      assert.strictEqual(yield* newContacts(first), 1)
      yield* first.stop

      // After a restart, as PostgreSQL tells: a first message, so spaced 5 s after the last one.
      const second = yield* startGateway(database, options)
      time.adjust("1 second")
      const tooSoon = yield* send(second, acme.accountKey, { to: personAfterRestart, text: "Hello from the shop" })
      assert.deepStrictEqual([code(tooSoon), tooSoon.headers["retry-after"]], ["429 rate_limited", "4"])
      time.adjust("4 seconds")
      assert.strictEqual(code(yield* send(second, acme.accountKey, { to: personAfterRestart, text: "Hello from the shop" })), "200 ok")
      assert.strictEqual(yield* newContacts(second), 2)
    }), { timeout: 60_000 })

  it.scopedLive("first messages the network refused are no mailing: the same answer before and after a restart", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const time = ManualClock.make(NOON)
      const first = yield* stoppable(startGateway(database, { sim: network, domainClock: time.clock }))
      const acme = yield* provision(first.ops)
      // After warm-up: 150 first messages a day, so only the mailing rule can stop these.
      time.adjust("4 days")
      const mailing = (gateway: RunningGateway, refused: boolean) =>
        Effect.gen(function*() {
          const to = uniquePhone()
          if (refused) yield* gateway.sim.failures(to, { mode: "reject", times: 1 })
          const answer = yield* send(gateway, acme.accountKey, { to, text: "BIG SALE today only!" })
          time.adjust("5 seconds")
          return code(answer)
        })
      for (let i = 0; i < 10; i++) assert.strictEqual(yield* mailing(first, true), "502 send_failed")
      // 24 sent in all, 14 delivered: the next is the 15th of the pattern, not its 25th.
      for (let i = 0; i < 15; i++) assert.strictEqual(yield* mailing(first, false), "200 ok", `delivered ${i + 1}`)
      yield* first.stop

      const second = yield* startGateway(database, { sim: network, domainClock: time.clock })
      for (let i = 15; i < 24; i++) assert.strictEqual(yield* mailing(second, false), "200 ok", `delivered ${i + 1}`)
      assert.strictEqual(yield* mailing(second, false), "429 spam_detected")
    }), { timeout: 60_000 })

  it.scopedLive("a first message half a second after another is told the rest of the 5 s, and goes after it", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hi" })), "200 ok")
      time.adjust("500 millis")
      const early = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hi" })
      assert.deepStrictEqual([code(early), early.headers["retry-after"]], ["429 rate_limited", "5"])
      time.adjust("4500 millis")
      assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "hi" })), "200 ok")
    }))

  it.scopedLive("a clock stepped back across midnight: the sends meanwhile count on the later day after a restart too", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const time = ManualClock.make(NOON)
      const options = { sim: network, domainClock: time.clock }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops)
      const used = (gateway: RunningGateway) =>
        Effect.flatMap(gateway.client(acme.accountKey), (api) => api.limits.get({ urlParams: {} })).pipe(
          Effect.map((limits) => limits.used.messages)
        )
      const peer = yield* peerWhoWrote(first, acme)
      for (let i = 0; i < 2; i++) {
        assert.strictEqual(code(yield* send(first, acme.accountKey, { to: peer, text: `afternoon ${i}` })), "200 ok")
        time.adjust("1 second")
      }
      // The number is looked at just after midnight: its new day has begun, with nothing used.
      const midnight = Almaty.nextMidnight(NOON)
      time.set(midnight + 1000)
      assert.strictEqual(yield* used(first), 0)
      // An NTP correction puts the clock ten seconds before midnight: the sends meanwhile count
      // on the new day.
      time.set(midnight - 10_000)
      for (let i = 0; i < 3; i++) {
        const answer = yield* send(first, acme.accountKey, { to: peer, text: `night ${i}` })
        assert.deepStrictEqual([code(answer), answer.headers["x-ratelimit-remaining"]], ["200 ok", String(199 - i)])
        time.adjust("1 second")
      }
      yield* first.stop

      // Restarted before that midnight comes again, and after: the same day, the same usage.
      const second = yield* stoppable(startGateway(database, options))
      assert.strictEqual(yield* used(second), 3)
      time.set(midnight + 60_000)
      assert.strictEqual(yield* used(second), 3)
      const next = yield* send(second, acme.accountKey, { to: peer, text: "morning" })
      assert.deepStrictEqual([code(next), next.headers["x-ratelimit-remaining"]], ["200 ok", "196"])
      yield* second.stop
      const third = yield* startGateway(database, options)
      assert.strictEqual(yield* used(third), 4)
    }), { timeout: 90_000 })

  it.scopedLive("a clock stepped back across midnight keeps the new day's counters", () =>
    Effect.gen(function*() {
      const { acme, gateway, time } = yield* world()
      const api = yield* gateway.client(acme.accountKey)
      const midnight = Almaty.nextMidnight(NOON)
      time.set(midnight + 1000)
      for (let i = 0; i < 3; i++) {
        assert.strictEqual(code(yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: `morning ${i}` })), "200 ok")
        time.adjust("5 seconds")
      }
      // An NTP correction puts the clock two seconds before midnight, then it runs on.
      time.set(midnight - 2000)
      assert.strictEqual((yield* api.limits.get({ urlParams: {} })).used.messages, 3)
      time.set(midnight + 30_000)
      const used = (yield* api.limits.get({ urlParams: {} })).used
      assert.deepStrictEqual([used.messages, used.new_contacts], [3, 3])
      const next = yield* send(gateway, acme.accountKey, { to: uniquePhone(), text: "morning 3" })
      assert.strictEqual(next.headers["x-ratelimit-remaining"], "196")
    }))
})
