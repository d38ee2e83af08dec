/**
 * The webhook delivery log's `failed` and `notice` filters read an index of the failed events,
 * not the account's whole history.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { provision } from "../support/Fixtures.js"
import { freshDatabase, sql } from "../support/TestGateway.js"
import { call, eventually, webhookGateway } from "../support/Webhooks.js"

describe("webhook delivery log filters", () => {
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
})
