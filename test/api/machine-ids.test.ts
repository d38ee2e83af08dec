/**
 * Every process of a cluster makes snowflakes (the ids of its requests to entities, persisted
 * ones included) from its own machine id: an `api` process takes the highest id that no runner
 * and no other api process holds, for as long as it runs, instead of @effect/cluster's random one,
 * which could be a runner's (docs/operations.md, "Runners' machine ids").
 */
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as MachineIds from "../../apps/gateway/src/cluster/MachineIds.js"
import { eventually, provision } from "../support/Fixtures.js"
import { freshDatabase, simulatedNetwork, startGateway, stoppable } from "../support/TestGateway.js"

describe("machine ids of api processes", () => {
  it.scopedLive("each api process makes its requests' ids under an id of its own, apart from the runner's; a stopped one's id is taken again", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const sql = yield* Effect.provide(SqlClient.SqlClient, database)
      const runner = yield* startGateway(database, { sim: network })
      const acme = yield* provision(runner.ops, { numbers: 1 })
      const first = yield* stoppable(startGateway(database, { role: "api", sim: network }))
      const second = yield* startGateway(database, { role: "api", sim: network })

      // An archive export is a persisted request to its entity, stored under the id its sender made.
      const exportThrough = (gateway: typeof second) =>
        Effect.gen(function*() {
          const api = yield* gateway.client(acme.accountKey)
          const created = yield* api.exports.create({ payload: { include_media: false } })
          const [row] = yield* sql<{ id: string }>`
            SELECT m.id::text AS id FROM cluster_messages m
            WHERE m.entity_type = 'Export' AND m.entity_id = ${String(created.id)} AND m.kind = 0 ORDER BY m.id LIMIT 1`
          assert.isDefined(row, `the export ${created.id}'s request is stored`)
          yield* eventually(api.exports.get({ path: { id: created.id } }), (e) => e.status === "done", 60_000)
          return Snowflake.machineId(Snowflake.Snowflake(row!.id))
        })
      assert.deepStrictEqual([yield* exportThrough(first), yield* exportThrough(second)], [1023, 1022])
      const runners = yield* sql<{ id: number }>`SELECT machine_id AS id FROM cluster_runners`
      assert.deepStrictEqual(runners.map((r) => r.id), [1], "the runner's, the first its row drew")

      // Stopped, its id is free: the next api process takes it.
      yield* first.stop
      const third = yield* startGateway(database, { role: "api", sim: network })
      assert.strictEqual(yield* exportThrough(third), 1023)

      // The session holding an id ends (a lost connection): the process takes one again at once.
      const holder = (id: number) =>
        Effect.map(
          sql<{ pid: number }>`
            SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = ${MachineIds.API_LOCK_SPACE}
              AND objid = ${id} AND objsubid = 2 AND granted`,
          (rows) => rows[0]?.pid ?? null
        )
      const lost = yield* holder(1022)
      yield* sql`SELECT pg_terminate_backend(${lost})`
      yield* eventually(holder(1022), (pid) => pid !== null && pid !== lost)
      assert.strictEqual(yield* exportThrough(second), 1022)
    }), { timeout: 120_000 })
})
