/**
 * The webhook delivery log does not grow for ever: a process that hosts entities deletes, when it
 * starts and every hour after, the events delivered or failed (and the notices) more than
 * WEBHOOK_LOG_RETENTION_DAYS ago with their attempts. Events still waiting (held behind a turned-off
 * endpoint included), events delivered within the retention however old, and events a kept resend
 * repeats stay, and can be resent. The log's `failed` and `notice` filters read an index of the
 * failed events, not the account's whole history. A resend of an event the deletion takes while
 * the resend is being written answers 404, not 500; a deletion that meets a resend being written
 * keeps that event and deletes the rest of its batch, without failing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as WebhookLogUpkeep from "../../apps/gateway/src/WebhookLogUpkeep.js"
import { provision } from "../support/Fixtures.js"
import { type DatabaseContext, freshDatabase, sql, stoppable } from "../support/TestGateway.js"
import { call, code, eventually, webhookGateway } from "../support/Webhooks.js"

const DAY = 24 * 60 * 60 * 1000

interface Entry {
  readonly event?: string
  readonly createdDaysAgo: number
  readonly deliveredDaysAgo?: number
  readonly failedDaysAgo?: number
  readonly resendOf?: string
}

/**
 * A gateway whose own sweep is off (the test runs the same sweep where it wants it), with an
 * account whose webhook is set and turned off, so that its waiting events stay waiting.
 */
const sweepOff = (database: DatabaseContext) =>
  Effect.gen(function*() {
    const gateway = yield* webhookGateway(database, { settings: { webhookLogRetentionDays: 0 } })
    const acme = yield* provision(gateway.ops, { numbers: 0 })
    const key = acme.accountKey
    assert.strictEqual((yield* call(gateway, "PUT", "/api/v1/webhook", key, { url: "http://127.0.0.1:9/hook", enabled: false })).status, 200)
    return { acme, gateway, key }
  })

/** An event of the account's log as the delivery loop leaves it, with one attempt when it was tried. */
const logged = (database: DatabaseContext, accountId: number, e: Entry) =>
  sql(database, (sql) =>
    Effect.gen(function*() {
      const ago = (days: number | undefined) => (days === undefined ? null : new Date(Date.now() - days * DAY))
      const event = e.event ?? "session.status"
      const payload = JSON.stringify({ event, timestamp: 1, data: { status: "x" } })
      const [row] = yield* sql<{ id: string }>`
        INSERT INTO webhook_outbox (account_id, event, payload, created_at, delivered_at, failed_at, attempts, resend_of)
        VALUES (${accountId}, ${event}, ${payload}::jsonb, ${ago(e.createdDaysAgo)}, ${ago(e.deliveredDaysAgo)},
                ${ago(e.failedDaysAgo)}, ${e.deliveredDaysAgo === undefined && e.failedDaysAgo === undefined ? 0 : 1},
                ${e.resendOf ?? null})
        RETURNING id::text`
      if (e.deliveredDaysAgo !== undefined || e.failedDaysAgo !== undefined) {
        yield* sql`
          INSERT INTO webhook_deliveries (outbox_id, account_id, attempt, url, status, created_at)
          VALUES (${row!.id}, ${accountId}, 1, 'http://127.0.0.1:9/hook', ${e.deliveredDaysAgo === undefined ? 500 : 200},
                  ${ago(e.deliveredDaysAgo ?? e.failedDaysAgo)})`
      }
      return Number(row!.id)
    }))

describe("webhook delivery log retention", () => {
  it.scopedLive("deletes events delivered or failed before the retention with their attempts; keeps waiting, recent and resent ones", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      // A gateway that keeps the log for ever sets the account's webhook up, then turns it off
      // so its waiting events stay waiting.
      const first = yield* stoppable(webhookGateway(database, { settings: { webhookLogRetentionDays: 0 } }))
      const acme = yield* provision(first.ops, { numbers: 0 })
      const key = acme.accountKey
      const hook = { url: "http://127.0.0.1:9/hook" }
      assert.strictEqual((yield* call(first, "PUT", "/api/v1/webhook", key, hook)).status, 200)
      assert.strictEqual((yield* call(first, "PUT", "/api/v1/webhook", key, { ...hook, enabled: false })).status, 200)

      const log = (e: Entry) => logged(database, acme.accountId, e)
      const oldDelivered = yield* log({ createdDaysAgo: 31, deliveredDaysAgo: 31 })
      const oldFailed = yield* log({ createdDaysAgo: 34, failedDaysAgo: 31 })
      const oldNotice = yield* log({ event: "webhook.status", createdDaysAgo: 31, failedDaysAgo: 31 })
      // Past the retention too, but newer than every event finished before the cut-off: an
      // account's events are delivered in order, so none after a waiting one has finished.
      const oldWaiting = yield* log({ createdDaysAgo: 30.5 })
      const lateDelivered = yield* log({ createdDaysAgo: 40, deliveredDaysAgo: 29 })
      const resent = yield* log({ createdDaysAgo: 35, deliveredDaysAgo: 35 })
      const resend = yield* log({ createdDaysAgo: 2, deliveredDaysAgo: 2, resendOf: String(resent) })
      const recent = yield* log({ createdDaysAgo: 1, deliveredDaysAgo: 1 })
      const ids = (a: { body: any }) => a.body.deliveries.map((d: any) => d.id).sort((x: number, y: number) => x - y)
      assert.lengthOf(ids(yield* call(first, "GET", "/api/v1/webhook/deliveries", key)), 8)
      yield* first.stop

      const gateway = yield* webhookGateway(database, { settings: { webhookLogRetentionDays: 30 } })
      const kept = yield* eventually(
        call(gateway, "GET", "/api/v1/webhook/deliveries", key),
        (a) => a.status === 200 && a.body.deliveries.length === 5,
        30_000
      )
      assert.deepStrictEqual(ids(kept), [oldWaiting, lateDelivered, resent, resend, recent])
      for (const gone of [oldDelivered, oldFailed, oldNotice]) {
        assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${gone}`, key)), "404 not_found")
      }
      // Their attempts went with them.
      const attempts = yield* sql(database, (sql) =>
        sql<{ outbox_id: string }>`SELECT outbox_id::text FROM webhook_deliveries WHERE account_id = ${acme.accountId} ORDER BY outbox_id`)
      assert.deepStrictEqual(attempts.map((a) => Number(a.outbox_id)), [lateDelivered, resent, resend, recent])
      assert.deepStrictEqual(
        ids(yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=pending", key)),
        [oldWaiting]
      )
      assert.deepStrictEqual(ids(yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=failed", key)), [])

      // What is kept can still be resent: the resend and the event it repeats.
      for (const event_id of [resent, resend]) {
        const again = yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { event_id })
        assert.deepStrictEqual([again.status, again.body.queued], [202, 1])
      }
    }), { timeout: 90_000 })

  it.scopedLive("the failed and notice filters read the failed events' index, not the account's history", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* webhookGateway(database)
      const acme = yield* provision(gateway.ops, { numbers: 0 })
      const other = yield* provision(gateway.ops, { numbers: 0 })
      // A month of delivered events of the account (and of another), a few failed ones and a notice.
      const failed = yield* sql(database, (sql) =>
        Effect.gen(function*() {
          for (const account of [acme.accountId, other.accountId]) {
            yield* sql`
              INSERT INTO webhook_outbox (account_id, event, payload, created_at, delivered_at, attempts)
              SELECT ${account}, 'message.received', '{"event":"message.received","timestamp":1,"data":{}}'::jsonb,
                     now() - make_interval(mins => g), now() - make_interval(mins => g), 1
              FROM generate_series(20000, 1, -1) g`
          }
          const rows = yield* sql<{ id: string }>`
            INSERT INTO webhook_outbox (account_id, event, payload, created_at, failed_at, attempts)
            VALUES (${acme.accountId}, 'message.received', '{"event":"message.received","timestamp":1,"data":{}}', now(), now(), 9),
                   (${acme.accountId}, 'webhook.status', '{"event":"webhook.status","timestamp":1,"data":{}}', now(), now(), 0)
            RETURNING id::text`
          yield* sql`ANALYZE webhook_outbox`
          return rows.map((r) => Number(r.id))
        }))
      const scans = sql(database, (sql) =>
        sql<{ n: string }>`SELECT idx_scan::text AS n FROM pg_stat_user_indexes WHERE indexrelname = 'webhook_outbox_failed'`)
      const before = Number((yield* scans)[0]?.n ?? -1)
      assert.isAtLeast(before, 0, "the failed events' index exists")

      const failedPage = yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=failed", acme.accountKey)
      assert.deepStrictEqual(failedPage.body.deliveries.map((d: any) => d.id), [failed[0]])
      const noticePage = yield* call(gateway, "GET", "/api/v1/webhook/deliveries?status=notice", acme.accountKey)
      assert.deepStrictEqual(noticePage.body.deliveries.map((d: any) => d.id), [failed[1]])
      // Statistics reach the view shortly after each statement: poll.
      yield* eventually(scans, (rows) => Number(rows[0]?.n) >= before + 2, 40_000)
    }), { timeout: 60_000 })

  it.scopedLive("the hourly deletion does not read the events held behind a turned-off endpoint, however many", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const { acme, gateway, key } = yield* sweepOff(database)
      // Events delivered long ago, then weeks of events held behind the endpoint turned off since,
      // all older than the retention.
      const old = yield* Effect.forEach([1, 2, 3], () => logged(database, acme.accountId, { createdDaysAgo: 70, deliveredDaysAgo: 70 }))
      yield* sql(database, (sql) =>
        Effect.gen(function*() {
          yield* sql`
            INSERT INTO webhook_outbox (account_id, event, payload, created_at, attempts)
            SELECT ${acme.accountId}, 'message.received', '{"event":"message.received","timestamp":1,"data":{}}'::jsonb,
                   now() - interval '60 days' + make_interval(mins => g), 0
            FROM generate_series(1, 20000) g`
          yield* sql`ANALYZE webhook_outbox`
        }))
      // Rows of the events read by any means (scans and index fetches), as the statistics say.
      const rowsRead = sql(database, (sql) =>
        Effect.map(
          sql<{ n: string }>`
            SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::text AS n
            FROM pg_stat_user_tables WHERE relname = 'webhook_outbox'`,
          (rows) => Number(rows[0]?.n ?? 0)
        ))
      const before = yield* rowsRead

      const deleted = yield* sql(database, (sql) => WebhookLogUpkeep.sweep(30).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
      assert.strictEqual(deleted, old.length)
      // Statistics reach the view shortly after each transaction: poll until the sweep's have.
      const after = yield* eventually(rowsRead, (n) => n >= before + old.length, 40_000)
      // Before, the sweep read every held event older than the cut-off, in each batch of every run.
      assert.isBelow(after - before, 1_000, `rows of webhook_outbox the sweep read: ${after - before}`)
      for (const gone of old) {
        assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${gone}`, key)), "404 not_found")
      }
      const [held] = yield* sql(database, (sql) =>
        sql<{ n: string }>`SELECT count(*)::text AS n FROM webhook_outbox WHERE account_id = ${acme.accountId} AND delivered_at IS NULL`)
      assert.strictEqual(Number(held!.n), 20000)
    }), { timeout: 90_000 })

  it.scopedLive("a resend of events the hourly deletion takes while the resend is written: 404 for one event, left out of a range; never 500", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const { acme, gateway, key } = yield* sweepOff(database)
      const kept = yield* logged(database, acme.accountId, { createdDaysAgo: 1, deliveredDaysAgo: 1 })

      /** The resend, with the deletion of `old` committed after the resend has seen it and before it writes. */
      const racing = (body: unknown) =>
        Effect.gen(function*() {
          // The hourly deletion, its transaction held open once it has deleted the old event.
          const swept = yield* Deferred.make<number>()
          const commit = yield* Deferred.make<void>()
          const sweeping = yield* Effect.fork(sql(database, (sql) =>
            WebhookLogUpkeep.sweep(30).pipe(
              Effect.tap((n) => Deferred.succeed(swept, n)),
              Effect.zipLeft(Deferred.await(commit)),
              sql.withTransaction,
              Effect.provideService(SqlClient.SqlClient, sql)
            )))
          assert.strictEqual(yield* Deferred.await(swept), 1)
          // The resend sees the event (its deletion is not committed) and waits on its row.
          const resend = yield* Effect.fork(call(gateway, "POST", "/api/v1/webhook/resend", key, body))
          yield* eventually(
            sql(database, (sql) =>
              sql<{ n: number }>`
                SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO webhook_outbox%resend_of%'`),
            (rows) => rows[0]!.n === 1,
            30_000
          )
          yield* Deferred.succeed(commit, undefined)
          yield* Fiber.join(sweeping)
          return yield* Fiber.join(resend)
        })

      // Before, the copy referred to the deleted event: a foreign-key error, 500 internal_error.
      const old = yield* logged(database, acme.accountId, { createdDaysAgo: 31, deliveredDaysAgo: 31 })
      const one = yield* racing({ event_id: old })
      assert.strictEqual(code(one), "404 not_found", JSON.stringify(one.body))
      yield* logged(database, acme.accountId, { createdDaysAgo: 31, deliveredDaysAgo: 31 })
      const unix = (daysAgo: number) => String(Math.floor((Date.now() - daysAgo * DAY) / 1000))
      const range = yield* racing({ since: unix(40), until: unix(10) })
      assert.deepStrictEqual([range.status, range.body.queued], [202, 0], JSON.stringify(range.body))

      // Nothing was queued; the kept event is still resent.
      const ids = (yield* call(gateway, "GET", "/api/v1/webhook/deliveries", key)).body.deliveries.map((d: any) => d.id)
      assert.deepStrictEqual(ids, [kept])
      const again = yield* call(gateway, "POST", "/api/v1/webhook/resend", key, { event_id: kept })
      assert.deepStrictEqual([again.status, again.body.queued], [202, 1])
    }), { timeout: 90_000 })

  it.scopedLive("the hourly deletion meeting a resend being written keeps that event and deletes the rest of its batch; never fails", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      // The test's own way in: the gateway's pool holds the resend, which waits here on purpose.
      const [{ name }] = yield* sql(database, (sql) => sql<{ name: string }>`SELECT current_database() AS name`)
      const direct = yield* Layer.build(Database.layerPostgres({
        url: Redacted.make(`postgres://postgres@127.0.0.1:5432/${name}`),
        maxConnections: 4
      }))
      const { acme, gateway, key } = yield* sweepOff(database)
      const resent = yield* logged(database, acme.accountId, { createdDaysAgo: 31, deliveredDaysAgo: 31 })
      const other = yield* logged(database, acme.accountId, { createdDaysAgo: 32, failedDaysAgo: 31 })

      // A resend's copy waits, before it is written, for a lock the test holds: the resend has
      // locked the event it copies and not committed.
      yield* sql(direct, (sql) =>
        sql`CREATE FUNCTION held_resend() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN PERFORM pg_advisory_xact_lock(4187); RETURN NEW; END $$`)
      yield* sql(direct, (sql) =>
        sql`CREATE TRIGGER held_resend BEFORE INSERT ON webhook_outbox
            FOR EACH ROW WHEN (NEW.resend_of IS NOT NULL) EXECUTE FUNCTION held_resend()`)
      const held = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holding = yield* Effect.fork(sql(direct, (sql) =>
        sql`SELECT pg_advisory_xact_lock(4187)`.pipe(
          Effect.zipRight(Deferred.succeed(held, undefined)),
          Effect.zipRight(Deferred.await(release)),
          sql.withTransaction
        )))
      yield* Deferred.await(held)
      const resend = yield* Effect.fork(call(gateway, "POST", "/api/v1/webhook/resend", key, { event_id: resent }))
      const waiting = (query: string) =>
        sql(direct, (sql) =>
          sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE ${query}`)
      yield* eventually(waiting("%INSERT INTO webhook_outbox%resend_of%"), (rows) => rows[0]!.n === 1, 30_000)

      // The deletion runs meanwhile: it either is done or waits on the event the resend locked.
      const sweeping = yield* Effect.fork(sql(direct, (sql) =>
        Effect.exit(WebhookLogUpkeep.sweep(30).pipe(Effect.provideService(SqlClient.SqlClient, sql)))))
      yield* eventually(
        Effect.zip(Fiber.poll(sweeping), waiting("%DELETE FROM webhook_outbox%")),
        ([done, rows]) => done._tag === "Some" || rows[0]!.n === 1,
        30_000
      )
      // The resend commits.
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holding)
      const answer = yield* Fiber.join(resend)
      assert.deepStrictEqual([answer.status, answer.body.queued], [202, 1], JSON.stringify(answer.body))
      // Before, the deletion broke the copy's reference to the event (SQLSTATE 23503) and the
      // whole batch failed: an ERROR in the log, and the other old event left for an hour.
      const swept = yield* Fiber.join(sweeping)
      assert.deepStrictEqual(swept, Exit.succeed(1), String(swept))

      // The resent event stays with its copy, and its attempt; the other went with its attempt.
      const log = (yield* call(gateway, "GET", "/api/v1/webhook/deliveries", key)).body.deliveries
      assert.deepStrictEqual(log.map((d: any) => [d.event_id, d.resend]), [[resent, true], [resent, false]])
      assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/webhook/deliveries/${other}`, key)), "404 not_found")
      const attempts = yield* sql(direct, (sql) =>
        sql<{ outbox_id: string }>`SELECT outbox_id::text FROM webhook_deliveries WHERE account_id = ${acme.accountId}`)
      assert.deepStrictEqual(attempts.map((a) => Number(a.outbox_id)), [resent])
      // The next sweep keeps it too.
      assert.strictEqual(yield* sql(direct, (sql) =>
        WebhookLogUpkeep.sweep(30).pipe(Effect.provideService(SqlClient.SqlClient, sql))), 0)
      assert.lengthOf((yield* call(gateway, "GET", "/api/v1/webhook/deliveries", key)).body.deliveries, 2)
    }), { timeout: 90_000 })
})
