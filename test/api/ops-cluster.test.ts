/**
 * The operator's view of the cluster: GET /ops/v1/cluster (operator token) and the page that
 * shows it, GET /ops/cluster.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import pg from "pg"
import type { ClusterView } from "@wagate/domain/ClusterView"
import { DatabasePool } from "@wagate/store/Database"
import * as Context from "effect/Context"
import { provision } from "../support/Fixtures.js"
import { freshDatabase, startGateway } from "../support/TestGateway.js"

/** The cluster view once `ready` holds of it, read again every 200 ms for up to 30 s. */
const untilView = (
  gateway: Effect.Effect.Success<ReturnType<typeof startGateway>>,
  ready: (view: typeof ClusterView.Type) => boolean
) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    for (;;) {
      const view = yield* gateway.ops.ops.cluster()
      if (ready(view)) return view
      if (Date.now() > deadline) return assert.fail(`the cluster view never got there: ${JSON.stringify(view)}`)
      yield* Effect.sleep("200 millis")
    }
  })

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

  it.scopedLive("a runner waiting at a cold start for CLUSTER_MIN_RUNNERS says so, and its shards show unassigned", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database, {
        settings: { clusterMinRunners: 2, clusterStartWaitMs: 600_000 }
      })
      const runnerOf = (view: typeof ClusterView.Type) => {
        assert.strictEqual(view.runners.length, 1)
        return view.runners[0]
      }
      // Alone, it waits for a second runner that does not come.
      const waiting = yield* untilView(gateway, (view) => runnerOf(view).reported_at !== null)
      assert.deepStrictEqual(
        [runnerOf(waiting).waiting_for_runners, runnerOf(waiting).shards, waiting.unassigned_shards],
        [2, 0, 300]
      )
      // Another runner holding a shard lock (its own session, not one of the gateway's pool): the
      // cluster is running, and this runner joins it.
      const { connectionString } = Context.get(database, DatabasePool).options
      yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const other = new pg.Client({ connectionString })
          await other.connect()
          await other.query("SELECT pg_advisory_lock(999999::bigint)")
          return other
        }),
        (other) => Effect.promise(() => other.end())
      )
      const joined = yield* untilView(gateway, (view) => runnerOf(view).waiting_for_runners === null)
      assert.strictEqual(runnerOf(joined).shards, 300)
      assert.strictEqual(joined.unassigned_shards, 0)
    }), { timeout: 60_000 })

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
