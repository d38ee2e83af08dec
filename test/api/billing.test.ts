/**
 * Billing through the public and operator interfaces of running gateways: the daily drawdown at
 * Almaty midnight, pause and resume, payment first, payments through the provider webhook, and
 * exactly one charge per number and day across restarts and several runner processes. Days move
 * by a ManualClock (the gateways' domain clock), never by sleeping.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Almaty from "@wagate/domain/Almaty"
import * as TestPayments from "@wagate/numbers/billing/TestPayments"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { execFile } from "node:child_process"
import { join } from "node:path"
import { cabinetSettings, mailbox, signedUp } from "../support/Cabinet.js"
import { eventually, linked, metricValue, provision, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import {
  type DatabaseContext,
  freshDatabase,
  type GatewayOptions,
  OPERATOR_TOKEN,
  type RunningGateway,
  startGateway,
  stoppable
} from "../support/TestGateway.js"

const SECRET = "test-payments-secret"
/** 10:00 in Almaty on 2030-01-01 (05:00 UTC). */
const START = Date.parse("2030-01-01T05:00:00.000Z")
const DAY = Almaty.DAY_MILLIS

const options = (time: ManualClock.ManualClock, extra: GatewayOptions["settings"] = {}): GatewayOptions => ({
  domainClock: time.clock,
  settings: {
    billingTickMs: 50,
    paymentsTestSecret: Option.some(Redacted.make(SECRET)),
    webhookAllowPrivateUrls: true,
    ...extra
  }
})

const tiyn = (kzt: number) => Math.round(kzt * 100)

/** The account's whole ledger, oldest first, amounts in tiyn. */
const ledger = (gateway: RunningGateway, accountId: number) =>
  Effect.gen(function*() {
    const rows: Array<{ kind: string; amount: number; number_id: number | null; day: string | null }> = []
    let before: number | undefined
    for (;;) {
      const page = yield* gateway.ops.opsBilling.ledger({ path: { id: accountId }, urlParams: { limit: 1000, before } })
      rows.push(...page.entries.map((e) => ({ ...e, amount: tiyn(e.amount) })))
      if (page.next_before === null) break
      before = page.next_before
    }
    return rows.reverse()
  }).pipe(Effect.orDie)

const balanceOf = (gateway: RunningGateway, accountId: number) =>
  Effect.map(gateway.ops.ops.showAccount({ path: { id: accountId } }), (a) => tiyn(a.balance.balance)).pipe(Effect.orDie)

/** Charges of a day per number: each must be 1. */
const chargesOn = (rows: ReadonlyArray<{ kind: string; number_id: number | null; day: string | null }>, day: string) =>
  rows.filter((r) => r.kind === "number_day" && r.day === day).map((r) => r.number_id)

const send = (gateway: RunningGateway, key: string, to: string) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.execute(
      HttpClientRequest.post("/api/v1/messages/send").pipe(
        HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
        HttpClientRequest.bodyUnsafeJson({ to, text: "hello" })
      )
    )
    const body: any = yield* response.json
    return `${response.status} ${body.code ?? "ok"}`
  }).pipe(Effect.orDie)

const get = (gateway: RunningGateway, path: string, key: string) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.execute(
      HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }))
    )
    return (yield* response.json) as any
  }).pipe(Effect.orDie)

/** A POST as a client sends it (the typed client would refuse to send a bad value itself). */
const post = (gateway: RunningGateway, path: string, key: string, body: unknown) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.execute(
      HttpClientRequest.post(path).pipe(
        HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
        HttpClientRequest.bodyUnsafeJson(body)
      )
    )
    const json: any = yield* response.json
    return { answer: `${response.status} ${json.code ?? "ok"}`, json }
  }).pipe(Effect.orDie)

const drawdown = (gateway: RunningGateway, date?: string) =>
  gateway.ops.opsBilling.drawdown({ payload: date === undefined ? {} : { date } }).pipe(Effect.orDie)

const sessionEvents = (database: DatabaseContext, accountId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ payload: any }>`
      SELECT payload FROM webhook_outbox WHERE account_id = ${accountId} AND event = 'session.status' ORDER BY id`
    return rows.map((r) => r.payload.data).filter((d: any) => d.status === "paused" || d.status === "resumed")
      .map((d: any) => `${d.number_id} ${d.status}`)
  }).pipe(Effect.provide(database), Effect.orDie)

/** Stores a file of `bytes` for the number, as an incoming video would: storage above the allowance. */
const storeFile = (database: DatabaseContext, accountId: number, numberId: number, bytes: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const media = JSON.stringify({ kind: "video", mime_type: "video/mp4", filename: null, size: bytes, caption: null, deleted: false })
    yield* sql`
      WITH m AS (
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text, status, media)
        VALUES (${accountId}, ${numberId}, 'in', 'network', '77010000009@c.us', '77010000009', ${`BIG${numberId}`}, 'video', '',
                'received', ${media}::jsonb)
        RETURNING id, chat_id, created_at)
      INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, size, blob_key, created_at)
      SELECT id, ${accountId}, ${numberId}, chat_id, 'video', 'video/mp4', ${bytes}, ${`media/big-${numberId}`}, created_at FROM m`
  }).pipe(Effect.provide(database), Effect.orDie)

describe("billing", () => {
  it.scopedLive("a month of days with top-ups: the balance to the tiyn, equal to the ledger's sum", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 2, credit: 1234.56 })
      // Both numbers' first day was drawn when they were added.
      let expected = tiyn(1234.56) - 2 * 33_000
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), expected)

      // A reference model: each day the oldest numbers the balance covers are charged 330 KZT.
      const topUps: Record<number, number> = { 3: 2000, 9: 0.01, 17: 9900, 24: 700.5 }
      let active = 2
      for (let d = 1; d <= 30; d++) {
        time.set(Almaty.midnightOf(Almaty.dateOf(START + d * DAY)) + 60_000)
        const day = Almaty.dateOf(time.now())
        const run = yield* drawdown(gateway)
        assert.strictEqual(run.date, day)
        let charged = 0
        for (let n = 0; n < 2; n++) if (expected >= 33_000) (expected -= 33_000, charged++)
        active = charged
        if (topUps[d] !== undefined) {
          yield* gateway.ops.ops.credit({ path: { id: acme.accountId }, payload: { amount: topUps[d] } })
          expected += tiyn(topUps[d])
          // The top-up resumes what it covers at once, charging today for each resumed number.
          for (let n = active; n < 2; n++) if (expected >= 33_000) (expected -= 33_000, active++)
        }
        assert.strictEqual(yield* balanceOf(gateway, acme.accountId), expected, `day ${d} (${day})`)
        const balance = yield* get(gateway, "/api/v1/balance", acme.accountKey)
        assert.strictEqual(balance.active_numbers, active, `day ${d}`)
        assert.strictEqual(balance.paused_numbers, 2 - active, `day ${d}`)
      }
      const rows = yield* ledger(gateway, acme.accountId)
      assert.strictEqual(rows.reduce((sum, r) => sum + r.amount, 0), expected)
      // Never more than one charge per number and day.
      const seen = new Set<string>()
      for (const r of rows.filter((r) => r.kind === "number_day")) {
        const key = `${r.number_id} ${r.day}`
        assert.isFalse(seen.has(key), key)
        seen.add(key)
      }
      // A second run for the same day charges nothing.
      const again = yield* drawdown(gateway)
      assert.strictEqual(again.charges, 0)
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), expected)
    }), 120_000)

  it.scopedLive("the day begins at midnight in Almaty (19:00 UTC), not at midnight UTC", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(Date.parse("2030-02-01T18:59:00.000Z")) // 23:59 in Almaty
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 1, credit: 9900 })
      assert.deepStrictEqual(chargesOn(yield* ledger(gateway, acme.accountId), "2030-02-01"), [acme.numbers[0].id])
      time.set(Date.parse("2030-02-01T19:00:01.000Z")) // 00:00:01 on 2 February in Almaty
      // The drawdown singleton notices the new day by itself.
      const rows = yield* eventually(ledger(gateway, acme.accountId), (rows) => chargesOn(rows, "2030-02-02").length > 0)
      assert.deepStrictEqual(chargesOn(rows, "2030-02-02"), [acme.numbers[0].id])
      // Midnight UTC (05:00 in Almaty) is no new day.
      time.set(Date.parse("2030-02-02T00:00:01.000Z"))
      assert.strictEqual((yield* drawdown(gateway)).charges, 0)
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), tiyn(9900) - 2 * 33_000)
      // A day that has not begun cannot be drawn.
      const early = yield* Effect.flip(gateway.ops.opsBilling.drawdown({ payload: { date: "2030-02-03" } }))
      assert.strictEqual((early as any).code, "invalid_param")
    }), 60_000)

  it.scopedLive("pause when the balance runs out: 402 on send and check, shown everywhere, newest first; a top-up resumes at once", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database, options(time))
      // Two numbers and 990 KZT: today (660) is paid, tomorrow covers only the older number.
      const acme = yield* provision(gateway.ops, { numbers: 2, credit: 990 })
      yield* gateway.ops.opsWebhooks.set({ path: { id: acme.accountId }, payload: { url: "http://127.0.0.1:9/hook", enabled: true } })
      const [older, newer] = acme.numbers
      assert.strictEqual(yield* send(gateway, acme.numberKeys[1], uniquePhone()), "200 ok")

      time.set(Almaty.nextMidnight(START) + 1000)
      yield* eventually(get(gateway, "/api/v1/balance", acme.accountKey), (b) => b.paused_numbers === 1)
      assert.deepStrictEqual(yield* get(gateway, "/api/v1/balance", acme.accountKey), {
        balance: 0,
        daily_charge: 330,
        days_left: 0,
        active_numbers: 1,
        paused_numbers: 1
      })
      time.adjust("10 seconds")
      assert.strictEqual(yield* send(gateway, acme.numberKeys[1], uniquePhone()), "402 number_paused")
      const check = yield* gateway.http.execute(
        HttpClientRequest.post("/api/v1/contacts/check").pipe(
          HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.numberKeys[1]}` }),
          HttpClientRequest.bodyUnsafeJson({ phone: uniquePhone() })
        )
      ).pipe(Effect.orDie)
      assert.strictEqual(check.status, 402)
      assert.strictEqual(yield* send(gateway, acme.numberKeys[0], uniquePhone()), "200 ok")
      const numbers = yield* get(gateway, "/api/v1/numbers", acme.accountKey)
      assert.deepStrictEqual(numbers.numbers.map((n: any) => [n.id, n.paused, n.status]), [
        [older.id, false, "WORKING"],
        [newer.id, true, "WORKING"]
      ])
      assert.strictEqual(numbers.numbers[1].paid_until, null)
      assert.isTrue((yield* get(gateway, `/api/v1/limits?from=${newer.id}`, acme.accountKey)).paused)
      assert.isFalse((yield* get(gateway, `/api/v1/limits?from=${older.id}`, acme.accountKey)).paused)
      assert.strictEqual((yield* get(gateway, "/api/v1/status", acme.accountKey)).balance.paused_numbers, 1)
      assert.strictEqual((yield* get(gateway, "/api/v1/me", acme.accountKey)).paused_numbers, 1)

      // Still linked while paused: an incoming message is stored.
      const peer = uniquePhone()
      yield* gateway.sim.inbound({ to: newer.phone, from: peer, text: "are you there?" })
      yield* eventually(get(gateway, `/api/v1/messages?chat=${peer}`, acme.accountKey), (r) => r.messages?.length === 1)

      // The next day nothing is left: the older one is paused too.
      time.set(Almaty.nextMidnight(time.now()) + 1000)
      yield* eventually(get(gateway, "/api/v1/balance", acme.accountKey), (b) => b.paused_numbers === 2)

      // A top-up that covers both resumes both at once (today charged for each).
      yield* gateway.ops.ops.credit({ path: { id: acme.accountId }, payload: { amount: 1000 } })
      assert.deepStrictEqual(
        (yield* get(gateway, "/api/v1/balance", acme.accountKey)),
        { balance: 340, daily_charge: 660, days_left: 0, active_numbers: 2, paused_numbers: 0 }
      )
      time.adjust("10 seconds")
      assert.strictEqual(yield* send(gateway, acme.numberKeys[1], uniquePhone()), "200 ok")
      assert.deepStrictEqual(yield* sessionEvents(database, acme.accountId), [
        `${newer.id} paused`,
        `${older.id} paused`,
        `${older.id} resumed`,
        `${newer.id} resumed`
      ])
    }), 60_000)

  it.scopedLive("402 number_paused, the number and its limits say why: the balance ran out, or the operator paused the number", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      // The first day only: the next day the number is paused for the balance.
      const acme = yield* provision(gateway.ops, { numbers: 1, credit: 330 })
      const { id } = acme.numbers[0]
      const refusal = (path: string, body: unknown) =>
        Effect.gen(function*() {
          const response = yield* gateway.http.execute(
            HttpClientRequest.post(path).pipe(
              HttpClientRequest.setHeaders({ authorization: `Bearer ${acme.accountKey}` }),
              HttpClientRequest.bodyUnsafeJson(body)
            )
          )
          const answer: any = yield* response.json
          return `${response.status} ${answer.code}: ${answer.error}`
        }).pipe(Effect.orDie)
      const refusals = Effect.all([
        refusal("/api/v1/messages/send", { to: uniquePhone(), text: "hello" }),
        refusal("/api/v1/contacts/check", { phone: uniquePhone() }),
        Effect.map(get(gateway, "/api/v1/numbers", acme.accountKey), (list) => `number: ${list.numbers[0].pause_reason}`),
        Effect.map(get(gateway, `/api/v1/limits?from=${id}`, acme.accountKey), (limits) => `limits: ${limits.pause_reason}`)
      ])
      const forBalance = [
        "402 number_paused: The number is paused: the balance has run out",
        "402 number_paused: The number is paused: the balance has run out",
        "number: balance",
        "limits: balance"
      ]
      const byOperator = [
        "402 number_paused: The number is paused by the operator",
        "402 number_paused: The number is paused by the operator",
        "number: operator",
        "limits: operator"
      ]
      assert.strictEqual((yield* get(gateway, "/api/v1/numbers", acme.accountKey)).numbers[0].pause_reason, null)
      assert.strictEqual((yield* get(gateway, `/api/v1/limits?from=${id}`, acme.accountKey)).pause_reason, null)

      time.set(Almaty.nextMidnight(START) + 1000)
      yield* eventually(get(gateway, "/api/v1/balance", acme.accountKey), (b) => b.paused_numbers === 1)
      time.adjust("10 seconds")
      assert.deepStrictEqual(yield* refusals, forBalance)
      // Paused by the operator as well: the operator's pause is the one that holds it now.
      yield* gateway.ops.ops.pause({ path: { id }, payload: { paused: true } })
      time.adjust("10 seconds")
      assert.deepStrictEqual(yield* refusals, byOperator)
      // Resumed by the operator, still without money: paused for the balance again.
      yield* gateway.ops.ops.pause({ path: { id }, payload: { paused: false } })
      time.adjust("10 seconds")
      assert.deepStrictEqual(yield* refusals, forBalance)
    }), 60_000)

  it.scopedLive("payment comes first: a number is added only when the balance covers its first day", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 0, credit: 329.99 })
      const refused = yield* Effect.flip(
        gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone: uniquePhone() } })
      )
      assert.strictEqual((refused as any).code, "insufficient_balance")
      assert.match((refused as any).error, /329\.99 KZT.*330 KZT/)
      assert.strictEqual((yield* gateway.ops.ops.showAccount({ path: { id: acme.accountId } })).numbers.length, 0)
      yield* gateway.ops.ops.credit({ path: { id: acme.accountId }, payload: { amount: 0.01 } })
      // Added at 10:00: the whole day is charged, once.
      yield* gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone: uniquePhone() } })
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 0)
      assert.strictEqual((yield* drawdown(gateway)).charges, 0)
    }), 60_000)

  it.scopedLive("a day missed while down is charged once when the gateway is back", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const database = yield* freshDatabase
      const first = yield* stoppable(startGateway(database, options(time)))
      const acme = yield* provision(first.ops, { numbers: 1, credit: 9900 })
      yield* first.stop
      // Down for three midnights.
      time.set(START + 3 * DAY)
      const second = yield* startGateway(database, options(time))
      const rows = yield* eventually(ledger(second, acme.accountId), (rows) => chargesOn(rows, Almaty.dateOf(time.now())).length > 0)
      for (let d = 0; d <= 3; d++) {
        assert.deepStrictEqual(chargesOn(rows, Almaty.dateOf(START + d * DAY)), [acme.numbers[0].id], `day ${d}`)
      }
      assert.strictEqual((yield* drawdown(second)).charges, 0)
      assert.strictEqual(yield* balanceOf(second, acme.accountId), tiyn(9900) - 4 * 33_000)
    }), 60_000)

  it.scopedLive("two runner processes and a restart in the middle of a drawdown charge each number once a day", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const database = yield* freshDatabase
      // Slow ticks: the drawdowns of this test are the ones it starts.
      const slow = options(time, { billingTickMs: 3_600_000, entityTimeoutMs: 60_000 })
      const first = yield* stoppable(startGateway(database, slow))
      const accounts = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => i),
        () => provision(first.ops, { numbers: 1, credit: 990, link: false }),
        { concurrency: 2 }
      )
      const second = yield* startGateway(database, slow)
      time.set(Almaty.nextMidnight(START) + 1000)
      // Both processes draw the same day at once, and the first one stops in the middle.
      const racing = yield* Effect.fork(Effect.all([drawdown(first), drawdown(second), drawdown(second)], { concurrency: 3 }).pipe(Effect.either))
      yield* Effect.sleep("30 millis")
      yield* first.stop
      yield* racing.await
      const third = yield* startGateway(database, slow)
      // Whatever the race left undone is settled now, once.
      yield* drawdown(third)
      const day = Almaty.dateOf(time.now())
      for (const acme of accounts) {
        const rows = yield* ledger(third, acme.accountId)
        assert.deepStrictEqual(chargesOn(rows, day), [acme.numbers[0].id])
        assert.strictEqual(yield* balanceOf(third, acme.accountId), tiyn(990) - 2 * 33_000)
        assert.strictEqual(rows.reduce((sum, r) => sum + r.amount, 0), tiyn(990) - 2 * 33_000)
      }
    }), 120_000)

  it.scopedLive("payments through the provider webhook: credited once; forged, tampered, stale and replayed ones credit nothing", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 0, credit: 0 })
      const post = (provider: string, signed: { body: string; headers: Record<string, string> }) =>
        Effect.gen(function*() {
          const response = yield* gateway.http.execute(
            HttpClientRequest.post(`/payments/v1/${provider}/webhook`).pipe(
              HttpClientRequest.setHeaders(signed.headers),
              HttpClientRequest.bodyText(signed.body, "application/json")
            )
          )
          const body: any = yield* response.json
          return `${response.status} ${body.code ?? `credited=${body.credited}`}`
        }).pipe(Effect.orDie)
      const event = { type: "payment.succeeded" as const, payment_id: "pay_1", account_id: acme.accountId, amount: 990_000 }
      const now = () => Math.floor(Date.now() / 1000)
      const good = TestPayments.sign(Redacted.make(SECRET), event, now())
      assert.strictEqual(yield* post("test", good), "200 credited=true")
      assert.strictEqual(yield* post("test", good), "200 credited=false")
      assert.strictEqual(yield* post("test", TestPayments.sign(Redacted.make(SECRET), event, now() + 1)), "200 credited=false")
      assert.strictEqual(yield* post("test", TestPayments.sign(Redacted.make("not the secret"), { ...event, payment_id: "pay_2" }, now())), "400 invalid_signature")
      assert.strictEqual(yield* post("test", { ...good, body: good.body.replace("990000", "9900000") }), "400 invalid_signature")
      assert.strictEqual(yield* post("test", { body: JSON.stringify({ ...event, payment_id: "pay_3" }), headers: {} }), "400 invalid_signature")
      assert.strictEqual(yield* post("test", TestPayments.sign(Redacted.make(SECRET), { ...event, payment_id: "pay_4" }, now() - 3600)), "400 invalid_signature")
      assert.strictEqual(yield* post("nope", good), "404 not_found")
      assert.strictEqual(yield* post("test", TestPayments.sign(Redacted.make(SECRET), { ...event, payment_id: "pay_6", account_id: 999_999 }, now())), "400 invalid_signature")
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 990_000)
      // The operator's test payment goes through the same path, once per payment id.
      const paid = yield* gateway.ops.opsBilling.testPayment({ path: { id: acme.accountId }, payload: { amount: 100, payment_id: "pay_5" } })
      assert.deepStrictEqual([paid.credited, paid.balance.balance], [true, 10_000])
      const again = yield* gateway.ops.opsBilling.testPayment({ path: { id: acme.accountId }, payload: { amount: 100, payment_id: "pay_5" } })
      assert.deepStrictEqual([again.credited, again.balance.balance], [false, 10_000])
      const rows = yield* ledger(gateway, acme.accountId)
      assert.deepStrictEqual(rows.map((r) => [r.kind, r.amount]), [["payment", 990_000], ["payment", 10_000]])
    }), 60_000)

  it.scopedLive("a provider's payment past the most an account may hold: answered 200, credited up to it, the rest in its ledger row for the operator", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 0, credit: 999_999_990 })
      const webhook = (event: { payment_id: string; amount: number }) =>
        Effect.gen(function*() {
          const signed = TestPayments.sign(
            Redacted.make(SECRET),
            { type: "payment.succeeded", account_id: acme.accountId, ...event },
            Math.floor(Date.now() / 1000)
          )
          const response = yield* gateway.http.execute(
            HttpClientRequest.post("/payments/v1/test/webhook").pipe(
              HttpClientRequest.setHeaders(signed.headers),
              HttpClientRequest.bodyText(signed.body, "application/json")
            )
          )
          return [response.status, yield* response.json]
        }).pipe(Effect.orDie)

      // The operator's metrics count what was not credited (the counters are the process's, shared
      // with the file's other tests: counted from here).
      const notCredited = Effect.map(
        gateway.ops.ops.metrics(),
        (text) => [metricValue(text, "wagate_payments_not_credited"), metricValue(text, "wagate_payments_not_credited_tiyn")]
      ).pipe(Effect.orDie)
      const [payments, tiyn] = yield* notCredited

      // 50 KZT paid, 10 KZT of room: 10 credited, 40 not. Before, the whole payment was answered
      // 400 invalid_param, which a provider need not send again: the money was taken, never credited.
      const first = yield* webhook({ payment_id: "pay_big", amount: 5_000 })
      assert.deepStrictEqual(first, [200, { received: true, credited: true, not_credited: 40 }])
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 100_000_000_000)
      const noted = "payment pay_big (test); 40 KZT of 50 KZT not credited: the balance would have come to more than an " +
        "account may hold (1000000000 KZT); refund it to the payer or credit it once the balance has room"
      const last = (yield* gateway.ops.opsBilling.ledger({ path: { id: acme.accountId }, urlParams: {} })).entries[0]!
      assert.deepStrictEqual([last.kind, last.amount, last.note], ["payment", 10, noted])
      // Sent again: nothing more is credited or recorded.
      assert.deepStrictEqual(yield* webhook({ payment_id: "pay_big", amount: 5_000 }), [200, { received: true, credited: false, not_credited: 0 }])
      // At the maximum, a payment is recorded with nothing credited.
      assert.deepStrictEqual(yield* webhook({ payment_id: "pay_full", amount: 2_500 }), [200, { received: true, credited: true, not_credited: 25 }])
      const rows = yield* ledger(gateway, acme.accountId)
      assert.deepStrictEqual(rows.map((r) => [r.kind, r.amount]), [["top_up", 99_999_999_000], ["payment", 1_000], ["payment", 0]])
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 100_000_000_000)
      assert.deepStrictEqual(yield* notCredited, [payments! + 2, tiyn! + 4_000 + 2_500])
      // The operator's own credit past the maximum is still refused, nothing credited.
      const over = yield* post(gateway, `/ops/v1/accounts/${acme.accountId}/credit`, OPERATOR_TOKEN, { amount: 1 })
      assert.strictEqual(over.answer, "400 invalid_param")
    }), 60_000)

  it.scopedLive("money bounds: whole tiyn, at most 1 000 000 000 KZT held, paid_until at most 100 years ahead", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 0, credit: 0 })
      const ops = (path: string, body: unknown) =>
        post(gateway, `/ops/v1/accounts/${acme.accountId}${path}`, OPERATOR_TOKEN, body)

      // Less than a tiyn, or a fraction of one, is no amount: refused, nothing reaches the ledger.
      for (const amount of [0.001, 1e-300, 0.005, 12.345]) {
        for (const path of ["/credit", "/refund", "/test-payment"]) {
          const refused = yield* ops(path, { amount })
          assert.strictEqual(refused.answer, "400 invalid_param", `${path} ${amount}`)
          assert.match(refused.json.error, /^amount: Expected whole tiyn \(at most two decimals\)/)
        }
      }
      // One amount is at most what an account may hold, and the refusal says how much that is.
      for (const amount of [1e12, 33_000_000_000, 1_000_000_000.01]) {
        const refused = yield* ops("/credit", { amount })
        assert.strictEqual(refused.answer, "400 invalid_param", `${amount}`)
        assert.match(refused.json.error, /^amount: Expected at most 1000000000 KZT/)
      }
      assert.deepStrictEqual(yield* ledger(gateway, acme.accountId), [])

      // Up to the maximum the balance is exact to the tiyn; past it every way in is refused.
      assert.strictEqual((yield* ops("/credit", { amount: 999_999_999.99 })).answer, "200 ok")
      assert.strictEqual((yield* ops("/credit", { amount: 0.01 })).answer, "200 ok")
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 100_000_000_000)
      const over = yield* ops("/credit", { amount: 0.01 })
      assert.strictEqual(over.answer, "400 invalid_param")
      assert.match(over.json.error, /more than an account may hold \(1000000000 KZT\)/)
      assert.strictEqual((yield* ops("/test-payment", { amount: 1 })).answer, "400 invalid_param")
      const signed = TestPayments.sign(
        Redacted.make(SECRET),
        { type: "payment.succeeded", payment_id: "pay_over", account_id: acme.accountId, amount: 100 },
        Math.floor(Date.now() / 1000)
      )
      const webhook = yield* gateway.http.execute(
        HttpClientRequest.post("/payments/v1/test/webhook").pipe(
          HttpClientRequest.setHeaders(signed.headers),
          HttpClientRequest.bodyText(signed.body, "application/json")
        )
      ).pipe(
        Effect.flatMap((r) => Effect.map(r.json, (json: any) => `${r.status} ${json.code ?? `credited=${json.credited} not_credited=${json.not_credited}`}`)),
        Effect.orDie
      )
      // A provider's payment is money taken: recorded, none of it credited, the rest for the operator.
      assert.strictEqual(webhook, "200 credited=true not_credited=1")
      const rows = yield* ledger(gateway, acme.accountId)
      assert.deepStrictEqual(rows.map((r) => r.amount), [99_999_999_999, 1, 0])
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 100_000_000_000)

      // A number on the largest balance: every view answers, and paid_until is 100 years ahead.
      yield* gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone: uniquePhone() } })
      // The views count from the gateway's domain clock, as its days and charges do.
      const paidUntil = new Date(Almaty.nextMidnight(time.now()) + 36_500 * DAY).toISOString()
      assert.deepStrictEqual(yield* get(gateway, "/api/v1/balance", acme.accountKey), {
        balance: 999_999_670,
        daily_charge: 330,
        days_left: 36_500,
        active_numbers: 1,
        paused_numbers: 0
      })
      assert.strictEqual((yield* get(gateway, "/api/v1/me", acme.accountKey)).paid_until, paidUntil)
      assert.strictEqual((yield* get(gateway, "/api/v1/numbers", acme.accountKey)).numbers[0].paid_until, paidUntil)
      assert.strictEqual((yield* get(gateway, "/api/v1/status", acme.accountKey)).balance.days_left, 36_500)
      assert.strictEqual((yield* get(gateway, "/api/v1/status", acme.accountKey)).numbers[0].paid_until, paidUntil)
      const { numbers: [added] } = yield* get(gateway, "/api/v1/numbers", acme.accountKey)
      assert.strictEqual((yield* get(gateway, `/api/v1/numbers/${added.id}/connection`, acme.accountKey)).paid_until, paidUntil)
      const shown = yield* gateway.ops.ops.showAccount({ path: { id: acme.accountId } }).pipe(Effect.orDie)
      assert.strictEqual(shown.numbers[0].paid_until, paidUntil)
    }), 60_000)

  it.scopedLive("an unpaid day pauses its numbers at the Almaty midnight itself, not a tick later", () =>
    Effect.gen(function*() {
      // The domain clock's sleeps wait for the test, and the drawdown looks only once a day: only
      // the midnight itself wakes it.
      const time = ManualClock.stepped(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time, { billingTickMs: DAY }))
      const acme = yield* provision(gateway.ops, { numbers: 1, credit: 330 })
      assert.strictEqual(yield* send(gateway, acme.accountKey, uniquePhone()), "200 ok")
      time.set(Almaty.nextMidnight(START))
      yield* eventually(get(gateway, "/api/v1/balance", acme.accountKey), (b) => b.paused_numbers === 1)
      assert.strictEqual(yield* send(gateway, acme.accountKey, uniquePhone()), "402 number_paused")
    }), 60_000)

  it.scopedLive("a send on a day the drawdown has not reached yet settles the day first: never sent unpaid", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      // The drawdown sleeps by real time here: it does not run before the test ends.
      const gateway = yield* startGateway(yield* freshDatabase, options(time, { billingTickMs: DAY }))
      // Two numbers and 990 KZT: today (660) is paid, tomorrow covers only the older number.
      const acme = yield* provision(gateway.ops, { numbers: 2, credit: 990 })
      const [older, newer] = acme.numbers
      time.set(Almaty.nextMidnight(START) + 1000)
      // The older number's send settles the account's day: it is charged, the newer is paused
      // (and its entity told, as the drawdown would).
      assert.strictEqual(yield* send(gateway, acme.numberKeys[0], uniquePhone()), "200 ok")
      assert.deepStrictEqual(chargesOn(yield* ledger(gateway, acme.accountId), Almaty.dateOf(time.now())), [older.id])
      yield* eventually(get(gateway, `/api/v1/limits?from=${newer.id}`, acme.accountKey), (l) => l.paused === true)
      assert.strictEqual(yield* send(gateway, acme.numberKeys[1], uniquePhone()), "402 number_paused")
      // The next day, the older number's own send pauses it: nothing is left.
      time.set(Almaty.nextMidnight(time.now()) + 1000)
      assert.strictEqual(yield* send(gateway, acme.numberKeys[0], uniquePhone()), "402 number_paused")
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 0)
    }), 60_000)

  it.scopedLive("a contact check on a day the drawdown has not reached yet settles the day first: never checked unpaid", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      // The drawdown sleeps by real time here: it does not run before the test ends.
      const gateway = yield* startGateway(yield* freshDatabase, options(time, { billingTickMs: DAY }))
      // Two numbers and 990 KZT: today (660) is paid, tomorrow covers only the older number.
      const acme = yield* provision(gateway.ops, { numbers: 2, credit: 990 })
      const [older, newer] = acme.numbers
      const check = (key: string) => Effect.map(post(gateway, "/api/v1/contacts/check", key, { phone: uniquePhone() }), (r) => r.answer)
      time.set(Almaty.nextMidnight(START) + 1000)
      const today = Almaty.dateOf(time.now())
      // The newer number's check settles the account's day: the older is charged, the newer is
      // paused and its check refused.
      assert.strictEqual(yield* check(acme.numberKeys[1]), "402 number_paused")
      assert.deepStrictEqual(chargesOn(yield* ledger(gateway, acme.accountId), today), [older.id])
      yield* eventually(get(gateway, `/api/v1/limits?from=${older.id}`, acme.accountKey), (l) => l.paused === false)
      assert.isTrue((yield* get(gateway, `/api/v1/limits?from=${newer.id}`, acme.accountKey)).paused)
      // The older number checks on its paid day, charged once.
      time.adjust("10 seconds")
      assert.strictEqual(yield* check(acme.numberKeys[0]), "200 ok")
      assert.deepStrictEqual(chargesOn(yield* ledger(gateway, acme.accountId), today), [older.id])
      // The next day, the older number's own check pauses it: nothing is left.
      time.set(Almaty.nextMidnight(time.now()) + 1000)
      assert.strictEqual(yield* check(acme.numberKeys[0]), "402 number_paused")
      assert.strictEqual(yield* balanceOf(gateway, acme.accountId), 0)
      assert.deepStrictEqual(chargesOn(yield* ledger(gateway, acme.accountId), Almaty.dateOf(time.now())), [])
    }), 60_000)

  it.scopedLive("each number shows its own paid_until: on the last day the balance reaches, only the oldest are paid", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      // Today for both, three more days for both, and a fourth day for the older one only.
      const acme = yield* provision(gateway.ops, { numbers: 2, credit: 660 + 3 * 660 + 330 })
      const [older, newer] = acme.numbers
      const paidUntil = (list: any) => list.numbers.map((n: any) => [n.id, n.paid_until])
      const listed = yield* get(gateway, "/api/v1/numbers", acme.accountKey)
      const accountPaidUntil = (yield* get(gateway, "/api/v1/me", acme.accountKey)).paid_until
      assert.deepStrictEqual(paidUntil(listed), [
        [older.id, new Date(Date.parse(accountPaidUntil) + DAY).toISOString()],
        [newer.id, accountPaidUntil]
      ])
      assert.deepStrictEqual(paidUntil(yield* gateway.ops.ops.showAccount({ path: { id: acme.accountId } }).pipe(Effect.orDie)), paidUntil(listed))
      // As the days go, the newer number is paused when its paid period ends, the older a day later.
      for (let d = 1; d <= 5; d++) {
        time.set(Almaty.midnightOf(Almaty.dateOf(START + d * DAY)) + 60_000)
        yield* drawdown(gateway)
        const numbers = (yield* get(gateway, "/api/v1/numbers", acme.accountKey)).numbers
        assert.deepStrictEqual(numbers.map((n: any) => n.paused), [d > 4, d > 3], `day ${d}`)
      }
    }), 60_000)

  it.scopedLive("storage is owed when the balance does not cover it: the balance goes negative, the answers say what resumes the number, and paying that resumes it", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const database = yield* freshDatabase
      const box = yield* mailbox
      const gateway = yield* startGateway(database, options(time, cabinetSettings(box)))
      // An account with its cabinet: the first day of its number and 10 KZT; then one storage
      // pack (5 GB + 1 byte kept: 33 KZT a day).
      const cabinet = yield* signedUp(gateway.url, box, `owes-${uniquePhone()}@shop.kz`)
      const accountId: number = (yield* cabinet.get("/me")).body.account_id
      yield* gateway.ops.ops.credit({ path: { id: accountId }, payload: { amount: 340 } }).pipe(Effect.orDie)
      const { number } = yield* gateway.ops.ops.addNumber({ path: { id: accountId }, payload: { phone: uniquePhone() } }).pipe(Effect.orDie)
      yield* linked(gateway.ops, number.id)
      const acme = { accountId, accountKey: (yield* gateway.ops.ops.issueKey({ payload: { account_id: accountId } }).pipe(Effect.orDie)).key }
      const toResume = Effect.map(cabinet.get("/balance"), (r) => r.body.to_resume)
      yield* storeFile(database, acme.accountId, number.id, 5 * 1024 ** 3 + 1)
      for (let d = 1; d <= 3; d++) {
        time.set(Almaty.midnightOf(Almaty.dateOf(START + d * DAY)) + 60_000)
        yield* drawdown(gateway)
      }
      // The files are kept and their packs drawn each day: 10 - 3 × 33 KZT, owed.
      assert.deepStrictEqual(yield* get(gateway, "/api/v1/balance", acme.accountKey), {
        balance: -89,
        daily_charge: 33,
        days_left: 0,
        active_numbers: 0,
        paused_numbers: 1
      })
      assert.strictEqual(yield* toResume, 419)
      // One day's price settles the debt first: not enough, and the answer says so (no days
      // claimed while the number waits for money; the balance is short of 330 by 89 KZT).
      const short = yield* gateway.ops.ops.credit({ path: { id: acme.accountId }, payload: { amount: 330 } }).pipe(Effect.orDie)
      assert.deepStrictEqual(short, { balance: 241, daily_charge: 33, days_left: 0, active_numbers: 0, paused_numbers: 1 })
      assert.deepStrictEqual(yield* get(gateway, "/api/v1/balance", acme.accountKey), short)
      // The cabinet says what resumes it.
      assert.strictEqual(yield* toResume, 89)
      time.adjust("10 seconds")
      assert.strictEqual(yield* send(gateway, acme.accountKey, uniquePhone()), "402 number_paused")
      // What was missing resumes it at once: today is charged, nothing is owed.
      const resumed = yield* gateway.ops.ops.credit({ path: { id: acme.accountId }, payload: { amount: 89 } }).pipe(Effect.orDie)
      assert.deepStrictEqual(resumed, { balance: 0, daily_charge: 363, days_left: 0, active_numbers: 1, paused_numbers: 0 })
      assert.strictEqual(yield* toResume, 0)
      time.adjust("10 seconds")
      assert.strictEqual(yield* send(gateway, acme.accountKey, uniquePhone()), "200 ok")
      const rows = yield* ledger(gateway, acme.accountId)
      assert.deepStrictEqual(chargesOn(rows, Almaty.dateOf(time.now())), [number.id])
      assert.strictEqual(rows.filter((r) => r.kind === "storage_day").length, 3)
    }), 60_000)

  it.scopedLive("the CLI: refused number with exit 1, test payment, ledger, drawdown by hand", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(START)
      const gateway = yield* startGateway(yield* freshDatabase, options(time))
      const acme = yield* provision(gateway.ops, { numbers: 0, credit: 0 })
      const account = String(acme.accountId)
      // Each run of the CLI starts a Node process: few of them, and a generous time limit.
      const cli = (...args: Array<string>) =>
        Effect.async<{ exit: number; json: any }>((resume) => {
          execFile(
            process.execPath,
            ["--import", "tsx", join(import.meta.dirname, "../../apps/gateway/src/cli.ts"), ...args],
            { env: { ...process.env, WAGATE_URL: gateway.url, OPERATOR_TOKEN } },
            (error, stdout) => resume(Effect.succeed({ exit: error === null ? 0 : Number(error.code), json: JSON.parse(stdout) }))
          )
        })
      const refused = yield* cli("number", "add", "--account", account, "--phone", uniquePhone())
      assert.strictEqual(refused.exit, 1)
      assert.strictEqual(refused.json.code, "insufficient_balance")
      // A value the gateway would refuse is refused before it is sent, the way the gateway would.
      const negative = yield* cli("account", "credit", "--account", account, "--amount", "-5")
      assert.deepStrictEqual([negative.exit, negative.json], [1, {
        error: "amount: Expected a positive number, actual -5",
        code: "invalid_param"
      }])
      const huge = yield* cli("account", "credit", "--account", account, "--amount", "1000000000000")
      assert.deepStrictEqual([huge.exit, huge.json.code], [1, "invalid_param"])
      assert.match(huge.json.error, /^amount: Expected at most 1000000000 KZT/)
      const paid = yield* cli("account", "pay", "--account", account, "--amount", "660", "--payment-id", "pay_cli")
      assert.deepStrictEqual([paid.exit, paid.json.credited, paid.json.balance.balance], [0, true, 660])
      yield* gateway.ops.ops.addNumber({ path: { id: acme.accountId }, payload: { phone: uniquePhone() } })
      time.set(Almaty.nextMidnight(START) + 1000)
      const run = yield* cli("billing", "drawdown", "--date", Almaty.dateOf(time.now()))
      assert.strictEqual(run.exit, 0)
      assert.strictEqual(run.json.date, Almaty.dateOf(time.now()))
      const statement = yield* cli("account", "ledger", "--account", account)
      assert.deepStrictEqual(
        statement.json.entries.map((e: any) => [e.kind, e.amount, e.day]),
        [
          ["number_day", -330, Almaty.dateOf(time.now())],
          ["number_day", -330, Almaty.dateOf(START)],
          ["payment", 660, null]
        ]
      )
      assert.strictEqual(statement.json.balance.balance, 0)
    }), 300_000)
})
