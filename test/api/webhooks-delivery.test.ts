/**
 * Webhook delivery against a real HTTP receiver: the spec's envelope signed by Standard
 * Webhooks, order per account with a failing event holding back the later ones, retry times
 * driven by the clock, what counts as delivered, the rules that turn a webhook off, secret
 * rotation, isolation between accounts, and no loss across a runner restart mid-retry.
 */
import { assert, describe, it } from "@effect/vitest"
import * as PgClient from "@effect/sql-pg/PgClient"
import { ExportEvents, type Finished } from "@wagate/store/ExportEvents"
import * as RetrySchedule from "@wagate/webhooks/RetrySchedule"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Logger from "effect/Logger"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { Webhook } from "standardwebhooks"
import { metricValue, provision, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import { freshDatabase, type RunningGateway, simulatedNetwork, sql, stoppable } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, code, embeddedGateway, emit, eventually, outbox, webhookGateway } from "../support/Webhooks.js"

const SECOND = 1000
const HOUR = 3600 * SECOND

/** Sets the account's webhook to `url`, answering its secret. */
const setWebhook = (gateway: RunningGateway, key: string, url: string) =>
  Effect.map(call(gateway, "PUT", "/api/v1/webhook", key, { url }), (a) => {
    assert.strictEqual(a.status, 200, JSON.stringify(a.body))
    return a.body as { secret: string }
  })

/** Real time passes; for asserting that nothing more happens. */
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** The latest wait the schedule allows after attempt `n`, and a bit. */
const pastRetry = (n: number) => Math.ceil(RetrySchedule.baseDelay(n) * (1 + RetrySchedule.JITTER)) + SECOND

const statusOf = (r: WebhookReceiver.Received) => r.json.data.status as string

/** The lines logged from here to the end of the test's scope, with their causes. */
const capturedLog = Effect.gen(function*() {
  const logged: Array<{ readonly level: string; readonly message: string; readonly cause: string }> = []
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(Logger.make(({ cause, logLevel, message }) =>
    void logged.push({
      level: logLevel.label,
      message: (Array.isArray(message) ? message : [message]).join(" "),
      cause: Cause.pretty(cause)
    })
  )))
  return logged
})

/** wagate_webhook_unreadable_events as the gateway's metrics show it (the counter is the process's). */
const unreadableCount = (gateway: RunningGateway) =>
  Effect.map(gateway.ops.ops.metrics(), (text) => metricValue(text, "wagate_webhook_unreadable_events")).pipe(Effect.orDie)

describe("the envelope and its signature", () => {
  it.scopedLive("a customer's message and the ack of a send reach the receiver as {event, timestamp, data}, signed", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { secret } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const peer = uniquePhone()
      yield* gateway.sim.inbound({ to: acme.numbers[0]!.phone, from: peer, name: "Aigerim", text: "Is the blue one in stock?" })
      const [incoming] = yield* receiver.waitFor("/acme", 1)
      assert.deepStrictEqual(Object.keys(incoming!.json), ["event", "timestamp", "data"])
      const { event, timestamp, data } = incoming!.json
      assert.strictEqual(event, "message")
      assert.isTrue(Number.isInteger(timestamp) && Math.abs(timestamp - Date.now() / 1000) < 60)
      assert.deepStrictEqual(
        { id: data.id, from: data.from, name: data.name, text: data.text, hasMedia: data.hasMedia },
        { id: data.id, from: peer, name: "Aigerim", text: "Is the blue one in stock?", hasMedia: false }
      )
      assert.isString(data.id)
      assert.match(incoming!.headers["webhook-id"]!, /^evt_\d+$/)
      assert.isBelow(Math.abs(Number(incoming!.headers["webhook-timestamp"]) - Date.now() / 1000), 5)
      assert.strictEqual(incoming!.headers["content-type"], "application/json")
      // An independent implementation of the scheme accepts it, and only with the right secret.
      assert.deepStrictEqual(new Webhook(secret).verify(incoming!.body, incoming!.headers), incoming!.json)
      assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString("base64")}`).verify(incoming!.body, incoming!.headers))

      const api = yield* gateway.client(acme.accountKey)
      const sent = yield* api.messages.send({ payload: { to: peer, text: "Yes, it is" } })
      const all = yield* receiver.waitFor("/acme", 2)
      const ack = all.find((r) => r.json.event === "message.ack")!
      assert.deepStrictEqual(
        { id: ack.json.data.id, to: ack.json.data.to, ack: ack.json.data.ack },
        { id: sent.wa_message_id, to: peer, ack: "sent" }
      )
      assert.deepStrictEqual(new Webhook(secret).verify(ack.body, ack.headers), ack.json)
    }))
  it.scopedLive("a lost connection reaches the receiver as session.status with the spec's status field", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { secret } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      yield* gateway.sim.disconnect(acme.numbers[0]!.phone, "connection_lost")
      const got = yield* eventually(
        Effect.sync(() => receiver.received("/acme").filter((r) => r.json.event === "session.status")),
        (rs) => rs.length >= 2
      )
      assert.deepStrictEqual(got.slice(0, 2).map(statusOf), ["disconnected", "connected"])
      assert.deepStrictEqual(Object.keys(got[0]!.json), ["event", "timestamp", "data"])
      for (const r of got) assert.deepStrictEqual(new Webhook(secret).verify(r.body, r.headers), r.json)
    }))

  it.scopedLive("export.ready is written with the export's end or not at all, carries id, status, size, files, messages and no link", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { secret } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const [{ id }] = yield* sql(gateway.database, (sql) =>
        sql<{ id: string }>`INSERT INTO exports (account_id) VALUES (${acme.accountId}) RETURNING id`)
      const exportId = Number(id)
      const at = new Date()
      const done: Finished = {
        _tag: "Done", exportId, size: 52_428_800, files: 120, messages: 4_321, missingFiles: 2,
        blobKey: `exports/${exportId}.zip`, expiresAt: new Date(at.getTime() + 24 * HOUR), at
      }
      const finish = (f: Finished) =>
        ExportEvents.pipe(Effect.flatMap((e) => e.finish(f)), Effect.provide(ExportEvents.Default), Effect.provide(gateway.database))

      // A transaction that fails after the export's end was written leaves neither it nor its event.
      const aborted = yield* Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        return yield* finish(done).pipe(Effect.zipRight(Effect.fail("archive upload not confirmed")), pg.withTransaction)
      }).pipe(Effect.provide(gateway.database), Effect.either)
      assert.isTrue(aborted._tag === "Left")
      assert.lengthOf(yield* outbox(gateway.database, acme.accountId), 0)
      const [row] = yield* sql(gateway.database, (sql) => sql<{ status: string }>`SELECT status FROM exports WHERE id = ${exportId}`)
      assert.strictEqual(row!.status, "queued")

      assert.isTrue(yield* finish(done))
      assert.isFalse(yield* finish(done), "an export ends once, with one event")
      const [ready] = yield* receiver.waitFor("/acme", 1)
      assert.deepStrictEqual(ready!.json, {
        event: "export.ready",
        timestamp: Math.floor(at.getTime() / 1000),
        data: {
          id: exportId, status: "done", size: 52_428_800, files: 120, messages: 4_321, missing_files: 2,
          expires_at: done.expiresAt.toISOString(), error: null
        }
      })
      assert.notMatch(ready!.body, /https?:|blob|exports\//, "no link, no storage key")
      assert.deepStrictEqual(new Webhook(secret).verify(ready!.body, ready!.headers), ready!.json)
      const [exported] = yield* sql(gateway.database, (sql) =>
        sql<{ status: string; size: string }>`SELECT status, size FROM exports WHERE id = ${exportId}`)
      assert.deepStrictEqual([exported!.status, Number(exported!.size)], ["done", 52_428_800])

      const [{ id: failedId }] = yield* sql(gateway.database, (sql) =>
        sql<{ id: string }>`INSERT INTO exports (account_id) VALUES (${acme.accountId}) RETURNING id`)
      assert.isTrue(yield* finish({ _tag: "Failed", exportId: Number(failedId), error: "storage unavailable", at }))
      const [, failed] = yield* receiver.waitFor("/acme", 2)
      assert.deepStrictEqual(failed!.json.data, {
        id: Number(failedId), status: "failed", size: null, files: null, messages: null, missing_files: null,
        expires_at: null, error: "storage unavailable"
      })
    }))
})

describe("order and retries", () => {
  it.scopedLive("a failing event holds back the later ones and is retried on the schedule, same webhook-id each time", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const { secret } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      receiver.answer("/acme", (n) => (n <= 3 ? 500 : 200))
      yield* emit(gateway.database, acme.accountId, 3)
      yield* receiver.waitFor("/acme", 1)
      const [first, second, third] = yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows[0]?.attempts === 1)
      const attemptAt = time.now()
      const next1 = first!.next_attempt_at!.getTime() - attemptAt
      assert.isAtLeast(next1, 8 * SECOND)
      assert.isAtMost(next1, 12 * SECOND)
      assert.deepStrictEqual([first!.last_status, second!.attempts, third!.attempts], [500, 0, 0])
      // Nothing else goes out before the retry is due, however long real time passes.
      yield* pause(400)
      assert.lengthOf(receiver.received("/acme"), 1)

      for (const n of [1, 2, 3]) {
        time.adjust(pastRetry(n) - (n === 1 ? 0 : 0))
        yield* receiver.waitFor("/acme", n + 1)
        if (n < 3) {
          const [row] = yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows[0]?.attempts === n + 1)
          const wait = row!.next_attempt_at!.getTime() - time.now()
          assert.isAtLeast(wait, RetrySchedule.baseDelay(n + 1) * 0.8 - 50, `after attempt ${n + 1}`)
          assert.isAtMost(wait, RetrySchedule.baseDelay(n + 1) * 1.2 + 50, `after attempt ${n + 1}`)
          yield* pause(100)
          assert.lengthOf(receiver.received("/acme"), n + 1, "the later events wait")
        }
      }
      const got = yield* receiver.waitFor("/acme", 6)
      assert.deepStrictEqual(got.map(statusOf), ["e1", "e1", "e1", "e1", "e2", "e3"])
      const ids = got.map((r) => r.headers["webhook-id"])
      assert.deepStrictEqual(ids.slice(0, 4), Array(4).fill(`evt_${first!.id}`))
      assert.deepStrictEqual(ids.slice(4), [`evt_${second!.id}`, `evt_${third!.id}`])
      for (const r of got) assert.deepStrictEqual(new Webhook(secret).verify(r.body, r.headers), r.json)
      const rows = yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows.every((r) => r.delivered_at !== null))
      assert.deepStrictEqual(rows.map((r) => r.attempts), [4, 1, 1])
      const detail = yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${first!.id}`, acme.accountKey)
      assert.deepStrictEqual(detail.body.attempt_log.map((a: any) => a.response_code), [500, 500, 500, 200])
      assert.deepStrictEqual([detail.body.status, detail.body.attempts, detail.body.response_code], ["delivered", 4, 200])
    }))

  it.scopedLive("events written concurrently for several accounts reach each account's receiver once each, in commit order", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const accounts = yield* Effect.forEach([1, 2, 3, 4], () => provision(gateway.ops, { numbers: 0 }))
      for (const a of accounts) yield* setWebhook(gateway, a.accountKey, receiver.url(`/a${a.accountId}`))
      // 8 writers at once, 30 events per account, interleaved.
      yield* Effect.forEach(
        Array.from({ length: 120 }, (_, i) => i),
        (i) => emit(gateway.database, accounts[i % 4]!.accountId, 1, `w${i}-`),
        { concurrency: 8, discard: true }
      )
      for (const a of accounts) {
        const got = yield* receiver.waitFor(`/a${a.accountId}`, 30)
        const rows = yield* outbox(gateway.database, a.accountId)
        // The order of the outbox ids is the order the transactions committed in.
        assert.deepStrictEqual(got.map((r) => r.headers["webhook-id"]), rows.map((r) => `evt_${r.id}`))
        assert.deepStrictEqual(got.map(statusOf), rows.map((r) => r.payload.data.status))
      }
      yield* pause(200)
      for (const a of accounts) assert.lengthOf(receiver.received(`/a${a.accountId}`), 30, "no duplicates")
    }))

  it.scopedLive("only a 2xx counts: a redirect, a 404, a hang past the timeout and a closed connection are retried", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock, settings: { webhookTimeoutMs: 300 } })
      const acme = yield* provision(gateway.ops)
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const answers: Array<WebhookReceiver.Answer> = [302, 404, "hang", "close", 204]
      receiver.answer("/acme", (n) => answers[n - 1] ?? 200)
      yield* emit(gateway.database, acme.accountId, 1)
      for (let n = 1; n <= 4; n++) {
        yield* receiver.waitFor("/acme", n)
        yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows[0]?.attempts === n)
        time.adjust(pastRetry(n))
      }
      yield* receiver.waitFor("/acme", 5)
      const [row] = yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows[0]?.delivered_at != null)
      const detail = yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${row!.id}`, acme.accountKey)
      const log = detail.body.attempt_log.map((a: any) => [a.response_code, a.error])
      assert.deepStrictEqual(log.slice(0, 2), [[302, null], [404, null]])
      assert.deepStrictEqual(log[2], [null, "No answer within 300ms"])
      assert.strictEqual(log[3][0], null)
      assert.match(log[3][1], /closed the connection without answering/)
      assert.deepStrictEqual(log[4], [204, null])
      assert.isAtLeast(detail.body.attempt_log[2].latency_ms, 290)
    }))

  it.scopedLive("a 2xx whose body never ends counts as delivered and does not hold the next event back", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { settings: { webhookTimeoutMs: 3000 } })
      const acme = yield* provision(gateway.ops, { numbers: 0 })
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      // 200, Content-Length 100, 7 bytes of it, and the connection held open.
      receiver.answer("/acme", (n) => (n === 1 ? "partial" : 200))
      yield* emit(gateway.database, acme.accountId, 2)
      // Waiting for the held connection would take the 3 s timeout and the retry after it.
      const got = yield* receiver.waitFor("/acme", 2, 2500)
      assert.deepStrictEqual(got.map(statusOf), ["e1", "e2"])
      const rows = yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows.every((r) => r.delivered_at !== null))
      assert.deepStrictEqual(rows.map((r) => [r.attempts, r.last_status]), [[1, 200], [1, 200]])
    }))
})

describe("turning a webhook off", () => {
  it.scopedLive("410 Gone turns it off at once and says so in the log; held events, and those of the time it is off, go out in order when it is turned on again", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      receiver.answer("/acme", 410)
      yield* emit(gateway.database, acme.accountId, 2)
      yield* receiver.waitFor("/acme", 1)
      const off = yield* eventually(call(gateway, "GET", "/api/v1/webhook", acme.accountKey), (a) => a.body.enabled === false)
      assert.deepStrictEqual([off.body.disabled_reason, off.body.pending_events], ["gone", 2])
      assert.match(off.body.notice, /answered 410 Gone/)
      time.adjust("7 hours")
      yield* pause(300)
      assert.lengthOf(receiver.received("/acme"), 1, "nothing is sent while it is off")
      // The account is told in the delivery log too, by an entry that is never sent.
      const notices = (yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=notice", acme.accountKey)).body.deliveries
      assert.deepStrictEqual(
        notices.map((d: any) => [d.event, d.status, d.response_code, d.error]),
        [["webhook.status", "notice", 410, off.body.notice]]
      )
      const notice = (yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${notices[0].id}`, acme.accountKey)).body
      assert.deepStrictEqual(
        [notice.payload.event, notice.payload.data.status, notice.payload.data.reason, notice.payload.data.url],
        ["webhook.status", "disabled", "gone", receiver.url("/acme")]
      )
      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/webhook/resend", acme.accountKey, { event_id: notices[0].id })), "404 not_found")
      // Events of the time it is off are kept, in order, not lost.
      yield* emit(gateway.database, acme.accountId, 1, "while-off")
      const held = yield* call(gateway, "GET", "/api/v1/webhook", acme.accountKey)
      assert.strictEqual(held.body.pending_events, 3)
      yield* pause(300)
      assert.lengthOf(receiver.received("/acme"), 1, "nothing is sent while it is off")

      receiver.answer("/acme", 200)
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const got = yield* receiver.waitFor("/acme", 4)
      assert.deepStrictEqual(got.map(statusOf), ["e1", "e1", "e2", "while-off1"])
      assert.strictEqual(got[0]!.headers["webhook-id"], got[1]!.headers["webhook-id"])
      const on = yield* eventually(call(gateway, "GET", "/api/v1/webhook", acme.accountKey), (a) => a.body.pending_events === 0)
      assert.deepStrictEqual([on.body.enabled, on.body.disabled_reason, on.body.notice], [true, null, null])
    }))

  it.scopedLive("no 2xx through the whole retry window: the event fails, the webhook is turned off and the account told", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      receiver.answer("/acme", 503)
      yield* emit(gateway.database, acme.accountId, 2)
      const start = time.now()
      for (let n = 1; n <= RetrySchedule.MAX_ATTEMPTS; n++) {
        yield* receiver.waitFor("/acme", n)
        yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows[0]!.attempts === n)
        if (n < RetrySchedule.MAX_ATTEMPTS) {
          const [row] = yield* outbox(gateway.database, acme.accountId)
          // Straight to the due time: the span of the attempts is the schedule's.
          time.set(row!.next_attempt_at!.getTime())
        }
      }
      const off = yield* eventually(call(gateway, "GET", "/api/v1/webhook", acme.accountKey), (a) => a.body.enabled === false)
      assert.strictEqual(off.body.disabled_reason, "failing")
      assert.match(off.body.notice, /no 2xx answer to event evt_\d+ in 23 attempts over about three days \(last: HTTP 503\)/)
      const span = time.now() - start
      assert.isAtLeast(span, RetrySchedule.retryWindowMs() * 0.8)
      assert.isAtMost(span, RetrySchedule.retryWindowMs() * 1.2)
      assert.isAbove(span, 2.3 * 24 * HOUR)

      const log = (yield* call(gateway, "GET", "/api/v1/webhook/deliveries", acme.accountKey)).body.deliveries
      assert.deepStrictEqual(log.map((d: any) => [d.event, d.status, d.attempts]), [
        ["webhook.status", "notice", 0],
        ["session.status", "pending", 0],
        ["session.status", "failed", 23]
      ])
      assert.strictEqual(log[2].response_code, 503)
      // The log tells the account what the webhook's resource tells it.
      assert.deepStrictEqual([log[0].error, log[0].response_code], [off.body.notice, 503])
      const failedOnly = (yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=failed", acme.accountKey)).body.deliveries
      assert.deepStrictEqual(failedOnly.map((d: any) => d.id), [log[2].id])
      time.adjust("1 day")
      yield* pause(300)
      assert.lengthOf(receiver.received("/acme"), 23, "the event is given up and the next one waits")

      // Fixed and turned on: the next event goes out; the failed one only when resent.
      receiver.answer("/acme", 200)
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const after = yield* receiver.waitFor("/acme", 24)
      assert.strictEqual(statusOf(after[23]!), "e2")
      const resend = yield* call(gateway, "POST", "/api/v1/webhook/resend", acme.accountKey, { event_id: log[2].event_id })
      assert.strictEqual(resend.status, 202)
      assert.strictEqual(statusOf((yield* receiver.waitFor("/acme", 25))[24]!), "e1")
    }), { timeout: 60_000 })
})

describe("secret rotation", () => {
  it.scopedLive("requests carry both signatures for 24 hours after a rotation, then only the new one", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const { secret: old } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const rotated = yield* call(gateway, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey)
      const fresh: string = rotated.body.secret
      yield* emit(gateway.database, acme.accountId, 1)
      const [during] = yield* receiver.waitFor("/acme", 1)
      assert.lengthOf(during!.headers["webhook-signature"]!.split(" "), 2)
      assert.deepStrictEqual(new Webhook(fresh).verify(during!.body, during!.headers), during!.json)
      assert.deepStrictEqual(new Webhook(old).verify(during!.body, during!.headers), during!.json)

      time.adjust(24 * HOUR - 5 * SECOND)
      yield* emit(gateway.database, acme.accountId, 1, "late")
      const [, stillBoth] = yield* receiver.waitFor("/acme", 2)
      assert.deepStrictEqual(new Webhook(old).verify(stillBoth!.body, stillBoth!.headers), stillBoth!.json)

      time.adjust(10 * SECOND)
      yield* emit(gateway.database, acme.accountId, 1, "after")
      const [, , after] = yield* receiver.waitFor("/acme", 3)
      assert.lengthOf(after!.headers["webhook-signature"]!.split(" "), 1)
      assert.deepStrictEqual(new Webhook(fresh).verify(after!.body, after!.headers), after!.json)
      assert.throws(() => new Webhook(old).verify(after!.body, after!.headers))
    }))
  it.scopedLive("a second rotation within the 24 hours keeps the first secret signing to its own end, beside the two newer ones", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const { secret: first } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      const rotate = Effect.map(call(gateway, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey), (r) => r.body)
      const second: string = (yield* rotate).secret
      time.adjust(HOUR)
      const rotated = yield* rotate
      const third: string = rotated.secret
      // Until the last earlier secret's end: the second's, 24 hours after the second rotation.
      assert.strictEqual(Date.parse(rotated.previous_secret_expires_at), time.now() + 24 * HOUR)
      const verifies = (delivery: WebhookReceiver.Received) =>
        [first, second, third].map((secret) => {
          try {
            new Webhook(secret).verify(delivery.body, delivery.headers)
            return true
          } catch {
            return false
          }
        })
      yield* emit(gateway.database, acme.accountId, 1)
      const [during] = yield* receiver.waitFor("/acme", 1)
      assert.deepStrictEqual(verifies(during!), [true, true, true])

      // 24 hours after the first rotation the first secret's time is over; the second's is not.
      time.adjust(23 * HOUR + 5 * SECOND)
      yield* emit(gateway.database, acme.accountId, 1, "later")
      const [, later] = yield* receiver.waitFor("/acme", 2)
      assert.deepStrictEqual(verifies(later!), [false, true, true])
      time.adjust(HOUR)
      yield* emit(gateway.database, acme.accountId, 1, "last")
      const [, , last] = yield* receiver.waitFor("/acme", 3)
      assert.deepStrictEqual(verifies(last!), [false, false, true])
      // A rotation after the earlier secrets' time keeps only the one it replaces.
      const fourth: string = (yield* rotate).secret
      yield* emit(gateway.database, acme.accountId, 1, "fourth")
      const [, , , afterFourth] = yield* receiver.waitFor("/acme", 4)
      assert.deepStrictEqual(
        [...verifies(afterFourth!), new Webhook(fourth).verify(afterFourth!.body, afterFourth!.headers) !== undefined],
        [false, false, true, true]
      )
      assert.lengthOf(afterFourth!.headers["webhook-signature"]!.split(" "), 2)
    }))
  it.scopedLive("the dependency-free verification sample of docs/webhooks.md accepts deliveries, during a rotation too, and refuses forgeries", () =>
    Effect.gen(function*() {
      const docs = readFileSync(join(import.meta.dirname, "../../docs/webhooks.md"), "utf8")
      const sample = /```js\n(\/\/ verify-webhook\.mjs[\s\S]*?)```/.exec(docs)
      assert.isNotNull(sample, "the sample is on the page")
      const file = join(mkdtempSync(join(tmpdir(), "wagate-docs-")), "verify-webhook.mjs")
      writeFileSync(file, sample![1]!)
      const { verifyWebhook } = yield* Effect.promise(() => import(pathToFileURL(file).href))

      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops)
      const { secret: old } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      yield* emit(gateway.database, acme.accountId, 1)
      const [before] = yield* receiver.waitFor("/acme", 1)
      assert.deepStrictEqual(verifyWebhook(old, before!.headers, before!.body), before!.json)
      const fresh: string = (yield* call(gateway, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey)).body.secret
      yield* emit(gateway.database, acme.accountId, 1, "rotated")
      const [, during] = yield* receiver.waitFor("/acme", 2)
      assert.deepStrictEqual(verifyWebhook(fresh, during!.headers, during!.body), during!.json)
      assert.deepStrictEqual(verifyWebhook(old, during!.headers, during!.body), during!.json)
      assert.throws(() => verifyWebhook(fresh, before!.headers, before!.body), /no valid signature/)
      assert.throws(() => verifyWebhook(old, during!.headers, during!.body.replace("rotated1", "rotated2")), /no valid signature/)
      const stale = { ...during!.headers, "webhook-timestamp": String(Math.floor(Date.now() / 1000) - 600) }
      assert.throws(() => verifyWebhook(old, stale, during!.body), /timestamp out of range/)
      // The sample and the package agree.
      assert.deepStrictEqual(new Webhook(fresh).verify(during!.body, during!.headers), verifyWebhook(fresh, during!.headers, during!.body))
    }))
})

describe("isolation between accounts", () => {
  it.scopedLive("an endpoint that hangs does not delay another account's deliveries", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { settings: { webhookTimeoutMs: 5000 } })
      const slow = yield* provision(gateway.ops)
      const quick = yield* provision(gateway.ops)
      yield* setWebhook(gateway, slow.accountKey, receiver.url("/slow"))
      yield* setWebhook(gateway, quick.accountKey, receiver.url("/quick"))
      receiver.answer("/slow", "hang")
      yield* emit(gateway.database, slow.accountId, 20)
      yield* receiver.waitFor("/slow", 1)
      const lags: Array<number> = []
      for (let i = 1; i <= 20; i++) {
        const sent = Date.now()
        yield* emit(gateway.database, quick.accountId, 1, `q${i}`)
        const got = yield* receiver.waitFor("/quick", i, 3000)
        lags.push(got[i - 1]!.at - sent)
      }
      // Held up behind the hanging endpoint would mean at least its 5 s timeout; the bound is
      // generous for a busy machine (speed itself is the webhook benchmark's business).
      assert.isBelow(Math.max(...lags), 4000, `lags ${lags.join(", ")} ms`)
      assert.lengthOf(receiver.received("/slow"), 1, "the hanging endpoint still holds its first event")
    }))
})

describe("an event that cannot be sent", () => {
  it.scopedLive("an event of a kind a newer release wrote is sent as written; one whose stored body is no envelope fails unsent, with why in the delivery log, logged once; the later ones go out in order", () =>
    Effect.gen(function*() {
      const logged = yield* capturedLog
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops, { numbers: 0 })
      const key = acme.accountKey
      yield* setWebhook(gateway, key, receiver.url("/acme"))
      const unreadableBefore = yield* unreadableCount(gateway)
      yield* emit(gateway.database, acme.accountId, 1, "before")
      yield* receiver.waitFor("/acme", 1)
      // An event of a kind this release does not know (as a newer release, during a rolling
      // upgrade, wrote it): sent as written. And the corruption: a row whose body is no envelope.
      const bad = yield* sql(gateway.database, (sql) =>
        sql<{ id: string }>`
          INSERT INTO webhook_outbox (account_id, event, payload)
          VALUES (${acme.accountId}, 'message.reaction', ${
          JSON.stringify({ event: "message.reaction", timestamp: 1, data: { status: "reaction" } })
        }::jsonb),
                 (${acme.accountId}, 'message', '"garbled"'::jsonb)
          RETURNING id`)
      const [, garbled] = bad.map((r) => Number(r.id))
      yield* emit(gateway.database, acme.accountId, 2, "after")

      // Before, the account's queue stopped at the first of them for good.
      const got = yield* receiver.waitFor("/acme", 4, 20_000)
      assert.deepStrictEqual(got.map(statusOf), ["before1", "reaction", "after1", "after2"])
      assert.strictEqual(got[1]!.json.event, "message.reaction")
      yield* pause(500)
      assert.lengthOf(receiver.received("/acme"), 4, "nothing of the unreadable event is sent")

      const failed = yield* eventually(
        call(gateway, "GET", "/api/v1/webhook/deliveries?status=failed", key),
        (a) => a.body.deliveries.length === 1
      )
      assert.deepStrictEqual(failed.body.deliveries.map((d: any) => [d.id, d.event_id, d.status, d.attempts, d.response_code]), [
        [garbled, garbled, "failed", 0, null]
      ])
      const garbledError = failed.body.deliveries[0].error as string
      assert.match(garbledError, /^Not sent: the gateway cannot read this event's stored body \(body: Expected \{/)
      assert.include(garbledError, "POST /webhook/resend")
      // Its page shows the body as stored, and no attempt.
      const detail = yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${garbled}`, key)
      assert.strictEqual(detail.status, 200, JSON.stringify(detail.body))
      assert.deepStrictEqual([detail.body.payload, detail.body.attempt_log], ["garbled", []])
      assert.strictEqual((yield* call(gateway, "GET", "/api/v1/webhook", key)).body.pending_events, 0)

      // Logged and counted once each, not at every pass.
      yield* pause(1000)
      const lines = logged.filter((l) => new RegExp(`account ${acme.accountId}\\b`).test(l.message))
      assert.deepStrictEqual(lines.map((l) => [l.level, l.message.replace(/ \(.*\)/, "")]), [
        ["ERROR", `webhook event evt_${garbled} of account ${acme.accountId} failed unsent: its stored body does not read; the account's later events go on`]
      ])
      assert.strictEqual((yield* unreadableCount(gateway)) - unreadableBefore, 1)
    }), { timeout: 60_000 })
})

describe("a failure outside an attempt", () => {
  it.scopedLive("a fault while the queue is worked: one error with its cause, retries by the clock with backoff, nothing counted; once it works, all go out", () =>
    Effect.gen(function*() {
      const logged = yield* capturedLog
      const time = ManualClock.stepped(Date.parse("2026-11-28T07:00:00.000Z"))
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* webhookGateway(yield* freshDatabase, { domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      // The fault: the database refuses every change of a queued event (as a bug of a statement
      // would), and the first event of the queue is one to fail unsent, a change.
      yield* sql(gateway.database, (sql) =>
        Effect.zipRight(
          sql`
            CREATE FUNCTION refuse_outbox_changes() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN RAISE EXCEPTION 'outbox changes refused by the test'; END $$`,
          sql`CREATE TRIGGER refuse_outbox_changes BEFORE UPDATE ON webhook_outbox FOR EACH ROW EXECUTE FUNCTION refuse_outbox_changes()`
        ))
      const [{ id }] = yield* sql(gateway.database, (sql) =>
        sql<{ id: string }>`
          INSERT INTO webhook_outbox (account_id, event, payload)
          VALUES (${acme.accountId}, 'message', '"garbled"'::jsonb)
          RETURNING id`)
      yield* emit(gateway.database, acme.accountId, 2)

      // The loop fails at that change. The poll wakes it every 50 ms: a wake-up ends the first
      // wait, not the second, which waits for the clock. Before, it failed every second, each
      // time with an error and its stack.
      const ofAccount = () => logged.filter((l) => new RegExp(`account ${acme.accountId}\\b`).test(l.message))
      yield* eventually(Effect.sync(ofAccount), (ls) => ls.length > 0)
      yield* pause(3000)
      assert.deepStrictEqual(ofAccount().map((l) => l.level), ["ERROR"])
      assert.strictEqual(
        ofAccount()[0]!.message,
        `webhook delivery of account ${acme.accountId} failed; its events wait, and the loop tries again with backoff (up to 30 s)`
      )
      // The cause, with the statement that failed.
      assert.include(ofAccount()[0]!.cause, "SqlError")
      assert.include(ofAccount()[0]!.cause, "WebhookStore.failUnsent")
      assert.lengthOf(receiver.received("/acme"), 0)
      time.adjust("1 minute")
      yield* pause(1000)
      assert.deepStrictEqual(ofAccount().map((l) => l.level), ["ERROR"])

      // The fault is gone: the loop goes on where it stood, each event on its first attempt, and
      // the log says once that the loop is back.
      yield* sql(gateway.database, (sql) => sql`DROP TRIGGER refuse_outbox_changes ON webhook_outbox`)
      time.adjust("1 minute")
      const got = yield* receiver.waitFor("/acme", 2, 20_000)
      assert.deepStrictEqual(got.map((r) => r.json.event), ["session.status", "session.status"])
      const rows = yield* eventually(
        outbox(gateway.database, acme.accountId),
        (rows) => rows.every((r) => r.delivered_at !== null || r.failed_at !== null)
      )
      assert.deepStrictEqual(rows.map((r) => [Number(r.id), r.attempts, r.failed_at !== null]), [
        [Number(id), 0, true],
        [Number(rows[1]!.id), 1, false],
        [Number(rows[2]!.id), 1, false]
      ])
      // The event that does not read leaves the queue first, then the loop says it is back.
      assert.deepStrictEqual(ofAccount().map((l) => l.level), ["ERROR", "ERROR", "INFO"])
      assert.include(ofAccount()[1]!.message, `webhook event evt_${id} of account ${acme.accountId} failed unsent`)
      assert.strictEqual(ofAccount()[2]!.message, `webhook delivery of account ${acme.accountId} resumed after 120 s and 4 retries`)
    }), { timeout: 60_000 })
})

describe("restart", () => {
  it.scopedLive("a runner stopped in the middle of a retry sequence loses nothing: the next one carries on", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const first = yield* stoppable(webhookGateway(database, { domainClock: time.clock, sim: network }))
      const acme = yield* provision(first.ops)
      const { secret } = yield* setWebhook(first, acme.accountKey, receiver.url("/acme"))
      receiver.answer("/acme", 500)
      yield* emit(database, acme.accountId, 3)
      yield* receiver.waitFor("/acme", 1)
      yield* eventually(outbox(database, acme.accountId), (rows) => rows[0]?.attempts === 1)
      time.adjust(pastRetry(1))
      yield* receiver.waitFor("/acme", 2)
      const [before] = yield* eventually(outbox(database, acme.accountId), (rows) => rows[0]?.attempts === 2)
      yield* first.stop

      receiver.answer("/acme", 200)
      yield* webhookGateway(database, { domainClock: time.clock, sim: network })
      yield* pause(300)
      assert.lengthOf(receiver.received("/acme"), 2, "the retry waits for its time on the new runner too")
      time.set(before!.next_attempt_at!.getTime())
      // The new runner reconnects the number, which adds a session.status event after ours.
      const ours = () => receiver.received("/acme").filter((r) => /^e\d$/.test(statusOf(r)))
      const got = yield* eventually(Effect.sync(ours), (rs) => rs.length >= 5)
      assert.deepStrictEqual(got.map(statusOf), ["e1", "e1", "e1", "e2", "e3"])
      assert.strictEqual(got[2]!.headers["webhook-id"], got[0]!.headers["webhook-id"])
      for (const r of got) assert.deepStrictEqual(new Webhook(secret).verify(r.body, r.headers), r.json)
      const rows = yield* eventually(outbox(database, acme.accountId), (rows) => rows.slice(0, 3).every((r) => r.delivered_at !== null))
      assert.deepStrictEqual(rows.slice(0, 3).map((r) => r.attempts), [3, 1, 1])
    }), { timeout: 60_000 })
})

describe("embedded database", () => {
  it.scopedLive("with PGlite (one connection, no LISTEN) events are found by polling, in order, retried and delivered", () =>
    Effect.gen(function*() {
      const time = ManualClock.make()
      const receiver = yield* WebhookReceiver.start
      const gateway = yield* embeddedGateway({ domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const { secret } = yield* setWebhook(gateway, acme.accountKey, receiver.url("/acme"))
      receiver.answer("/acme", (n) => (n === 1 ? 500 : 200))
      const sent = Date.now()
      yield* emit(gateway.database, acme.accountId, 3)
      const [first] = yield* receiver.waitFor("/acme", 1)
      // The default poll on the embedded database is 250 ms; generous for a busy machine.
      assert.isBelow(first!.at - sent, 5000)
      yield* eventually(outbox(gateway.database, acme.accountId), (rows) => rows[0]?.attempts === 1)
      yield* pause(400)
      assert.lengthOf(receiver.received("/acme"), 1, "the later events wait for the first")
      time.adjust(pastRetry(1))
      const got = yield* receiver.waitFor("/acme", 4)
      assert.deepStrictEqual(got.map(statusOf), ["e1", "e1", "e2", "e3"])
      for (const r of got) assert.deepStrictEqual(new Webhook(secret).verify(r.body, r.headers), r.json)
    }), { timeout: 60_000 })
})
