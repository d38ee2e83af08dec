/**
 * The operator's view of the cluster: GET /ops/v1/cluster (operator token) and the page that
 * shows it, GET /ops/cluster.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import pg from "pg"
import type { ClusterView } from "@wagate/domain/ClusterView"
import { DatabasePool } from "@wagate/store/Database"
import * as Outbox from "@wagate/store/Outbox"
import * as Context from "effect/Context"
import { linked, provision, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, OPERATOR_TOKEN, simulatedNetwork, startGateway, stoppable } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"

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
  it.scopedLive("counts numbers by status with the reasons of those not WORKING, and the webhook backlog", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database, { settings: { webhookAllowPrivateUrls: true } })
      const acme = yield* provision(gateway.ops, { numbers: 2 })
      const sql = yield* Effect.provide(SqlClient.SqlClient, database)
      // One number lost its connection (as a runner would record it), and two events wait for delivery
      // to an endpoint that does not answer.
      yield* sql`UPDATE numbers SET status = 'STARTING', status_reason = 'connection lost' WHERE id = ${acme.numbers[1].id}`
      const receiver = yield* WebhookReceiver.start
      receiver.answer("/hook", "hang")
      yield* gateway.ops.opsWebhooks.set({ path: { id: acme.accountId }, payload: { url: receiver.url("/hook") } })
      const pg = yield* Effect.provide(PgClient.PgClient, database)
      const enqueue = (accountId: number, n: number, age: string) =>
        Effect.gen(function*() {
          for (let i = 0; i < n; i++) yield* Outbox.enqueue(pg, accountId, Outbox.envelope("webhook.test", Date.now(), {}))
          yield* sql`UPDATE webhook_outbox SET created_at = now() - ${age}::interval WHERE account_id = ${accountId} AND id = (
            SELECT min(id) FROM webhook_outbox WHERE account_id = ${accountId})`
        })
      yield* enqueue(acme.accountId, 2, "30 seconds")
      // Another account turned its endpoint off: its events, a day old, wait for it and are no backlog.
      const quiet = yield* provision(gateway.ops, { numbers: 0 })
      yield* gateway.ops.opsWebhooks.set({ path: { id: quiet.accountId }, payload: { url: receiver.url("/off"), enabled: false } })
      yield* enqueue(quiet.accountId, 5, "1 day")

      // The runner reports its shards every 5 s; its first report may predate acquiring them.
      const view = yield* untilView(gateway, (view) => view.unassigned_shards === 0)
      assert.strictEqual(view.shards_per_group, 300)
      assert.deepStrictEqual(view.numbers.by_status, { WORKING: 1, STARTING: 1 })
      assert.deepStrictEqual(view.numbers.not_running, [])
      assert.deepStrictEqual(view.numbers.not_working, [
        { id: acme.numbers[1].id, phone: acme.numbers[1].phone, status: "STARTING", reason: "connection lost", linked: true }
      ])
      assert.strictEqual(view.webhooks.backlog, 2)
      assert.isAtLeast(view.webhooks.lag_seconds!, 29)
      assert.isBelow(view.webhooks.lag_seconds!, 3_600)
      assert.strictEqual(view.webhooks.held_accounts, 1)
      assert.isAtLeast(view.cluster_messages.unprocessed, 0)
      // This process's runner is listed with what it reported when it started.
      assert.strictEqual(view.runners.length, 1)
      assert.isTrue(view.runners[0].healthy)
      assert.isNotNull(view.runners[0].reported_at)
    }), { timeout: 60_000 })

  it.scopedLive("numbers whose shard no runner holds count as WAITING_FOR_RUNNER, not as WORKING; a logged-out number is listed", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const runner = yield* stoppable(startGateway(database, { sim: network }))
      const api = yield* startGateway(database, { role: "api", sim: network })
      const acme = yield* provision(runner.ops, { numbers: 2 })
      const [held, loggedOut] = acme.numbers
      // Logged out from its phone: no longer linked, STOPPED with its reason.
      yield* runner.sim.disconnect(loggedOut.phone, "logged_out")
      yield* linked(runner.ops, loggedOut.id, "STOPPED")
      const running = yield* untilView(api, (view) => view.unassigned_shards === 0)
      assert.deepStrictEqual(running.numbers.by_status, { WORKING: 1, STOPPED: 1 })
      assert.deepStrictEqual(running.numbers.not_running, [])
      const [relink] = running.numbers.not_working
      assert.deepStrictEqual(
        [running.numbers.not_working.length, relink.id, relink.status, relink.linked],
        [1, loggedOut.id, "STOPPED", false]
      )
      assert.include(relink.reason ?? "", "logged out")

      // The runner stops: the number keeps the status it stored, but no runner holds it.
      yield* runner.stop
      const stopped = yield* untilView(api, (view) => view.unassigned_shards === 300)
      assert.deepStrictEqual(stopped.numbers.by_status, { WAITING_FOR_RUNNER: 1, STOPPED: 1 })
      assert.deepStrictEqual(stopped.numbers.not_running.map((n) => [n.id, n.phone, n.status, n.runner]), [
        [held.id, held.phone, "WORKING", null]
      ])
      assert.isAtLeast(stopped.numbers.not_running[0].shard, 1)
      assert.isAtMost(stopped.numbers.not_running[0].shard, 300)
      assert.deepStrictEqual(stopped.numbers.not_working.map((n) => n.id), [loggedOut.id])
      // The metric says the same.
      const metrics = yield* api.http.get("/ops/v1/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }).pipe(
        Effect.flatMap((response) => response.text)
      )
      assert.include(metrics, 'wagate_numbers{status="WORKING"} 0')
      assert.include(metrics, 'wagate_numbers{status="WAITING_FOR_RUNNER"} 1')
    }), { timeout: 60_000 })

  it.scopedLive("a linked number on the runner's shards whose entity it has not started yet counts as WAKING", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const gateway = yield* startGateway(database)
      const acme = yield* provision(gateway.ops, { numbers: 1 })
      yield* untilView(gateway, (view) => view.unassigned_shards === 0 && view.numbers.by_status.WORKING === 1)
      // A number stored as linked and WORKING that nothing woke (as after a takeover, before the
      // runner wakes it): its stored status says WORKING, but no entity runs it.
      const sql = yield* Effect.provide(SqlClient.SqlClient, database)
      const phone = uniquePhone()
      const [asleep] = yield* sql<{ id: number }>`
        INSERT INTO numbers (account_id, phone, status, linked) VALUES (${acme.accountId}, ${phone}, 'WORKING', true)
        RETURNING id::int`
      const view = yield* untilView(gateway, (view) => view.numbers.by_status.WAKING === 1)
      assert.deepStrictEqual(view.numbers.by_status, { WORKING: 1, WAKING: 1 })
      const runner = view.runners[0]
      assert.strictEqual(runner.waking, 1)
      assert.deepStrictEqual(view.numbers.not_running.map((n) => [n.id, n.phone, n.status, n.runner]), [
        [asleep.id, phone, "WORKING", runner.address]
      ])
    }), { timeout: 60_000 })

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
