/**
 * The operator's view of the cluster: GET /ops/v1/cluster (operator token) and the page that
 * shows it, GET /ops/cluster.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { provision } from "../support/Fixtures.js"
import { freshDatabase, startGateway } from "../support/TestGateway.js"

describe("operator cluster view", () => {
  it.scoped("counts numbers by status with the reasons of those not WORKING, and the webhook backlog", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database)
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const sql = yield* Effect.provide(SqlClient.SqlClient, database)
      // One number lost its connection (as a runner would record it), and two events wait for delivery.
      yield* sql`UPDATE numbers SET status = 'STARTING', status_reason = 'connection lost' WHERE id = ${acme.numbers[1].id}`
      yield* sql`INSERT INTO webhook_outbox (account_id, event, payload, created_at)
        VALUES (${acme.accountId}, 'message', '{}', now() - interval '30 seconds'),
               (${acme.accountId}, 'message', '{}', now())`

      const view = yield* gateway.ops.ops.cluster()
      assert.strictEqual(view.shards_per_group, 300)
      assert.deepStrictEqual(view.numbers.by_status, { WORKING: 1, STARTING: 1 })
      assert.deepStrictEqual(view.numbers.not_working, [
        { id: acme.numbers[1].id, phone: acme.numbers[1].phone, status: "STARTING", reason: "connection lost" }
      ])
      assert.strictEqual(view.webhooks.backlog, 2)
      assert.isAtLeast(view.webhooks.lag_seconds!, 29)
      assert.isAtLeast(view.cluster_messages.unprocessed, 0)
      // This process's runner is listed with what it reported when it started.
      assert.strictEqual(view.runners.length, 1)
      assert.isTrue(view.runners[0].healthy)
      assert.isNotNull(view.runners[0].reported_at)
    }))

  it.scoped("needs the operator token; the page holds no data and is served to anyone", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const denied = yield* gateway.http.get("/ops/v1/cluster")
      assert.strictEqual(denied.status, 401)
      const page = yield* gateway.http.get("/ops/cluster")
      assert.strictEqual(page.status, 200)
      assert.match(page.headers["content-type"] ?? "", /^text\/html/)
      const html = yield* page.text
      assert.include(html, "/ops/v1/cluster")
      assert.include(html, "sessionStorage")
    }))
})
