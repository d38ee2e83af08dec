/**
 * The cluster's processed messages do not pile up: a process that hosts entities deletes those
 * older than a week (with their replies) when it starts and every hour after; messages still to
 * be processed, and recent ones, stay. Runners killed over an hour ago leave the operator's view.
 */
import { assert, describe, it } from "@effect/vitest"
import * as MachineId from "@effect/cluster/MachineId"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as Effect from "effect/Effect"
import { GONE_RUNNER_SECONDS, RETENTION_MS } from "../../apps/gateway/src/ClusterUpkeep.js"
import { eventually } from "../support/Fixtures.js"
import { type DatabaseContext, freshDatabase, sql, startGateway, stoppable } from "../support/TestGateway.js"

const DAY = 24 * 60 * 60 * 1000

/** A number's keep-alive request as the cluster stores it, `ageMs` old, with its reply when processed. */
const keepAlive = (database: DatabaseContext, entityId: string, ageMs: number, processed: boolean) =>
  sql(database, (sql) =>
    Effect.gen(function*() {
      const id = String(Snowflake.make({ timestamp: Date.now() - ageMs, machineId: MachineId.make(7), sequence: Number(entityId) }))
      yield* sql`
        INSERT INTO cluster_messages (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload, headers,
                                      trace_id, span_id, sampled, processed, request_id, last_reply_id)
        VALUES (${id}, NULL, 'default:1', 'Number', ${entityId}, 0, 'Cluster/Entity/keepAlive', NULL, '{}',
                'noop', 'noop', false, ${processed}, ${id}, ${processed ? id : null})`
      if (processed) {
        yield* sql`INSERT INTO cluster_replies (id, kind, request_id, payload, sequence) VALUES (${id}, 0, ${id}, '{}', NULL)`
      }
      return id
    }))

describe("cluster upkeep", () => {
  it.scopedLive("deletes processed messages older than a week with their replies; keeps unprocessed and recent ones", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      // The first gateway creates the cluster's tables.
      const first = yield* stoppable(startGateway(database))
      yield* first.stop

      const old = yield* keepAlive(database, "9001", RETENTION_MS + DAY, true)
      const oldPending = yield* keepAlive(database, "9002", RETENTION_MS + DAY, false)
      const recent = yield* keepAlive(database, "9003", RETENTION_MS - DAY, true)
      const messages = sql(database, (sql) =>
        sql<{ id: string }>`SELECT id::text FROM cluster_messages WHERE entity_id IN ('9001', '9002', '9003') ORDER BY id`)
      const replies = sql(database, (sql) =>
        sql<{ id: string }>`SELECT request_id::text AS id FROM cluster_replies WHERE request_id IN (${old}, ${recent}) ORDER BY id`)
      assert.strictEqual((yield* messages).length, 3)

      yield* startGateway(database)
      const kept = yield* eventually(messages, (rows) => rows.length === 2)
      assert.deepStrictEqual(kept.map((r) => r.id), [oldPending, recent])
      assert.deepStrictEqual((yield* replies).map((r) => r.id), [recent])
    }), { timeout: 60_000 })

  it.scopedLive("forgets runners without a heartbeat for an hour; keeps those that died more recently", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const first = yield* stoppable(startGateway(database))
      yield* first.stop
      // Two runners killed (no graceful stop, so their rows stay, marked unhealthy): one an hour
      // and a minute ago, one ten minutes ago.
      const killed = (address: string, seconds: number) =>
        sql(database, (sql) =>
          sql`INSERT INTO cluster_runners (address, runner, healthy, last_heartbeat)
              VALUES (${address}, '{}', false, NOW() - make_interval(secs => ${seconds}))`)
      yield* killed("10.0.0.7:34431", GONE_RUNNER_SECONDS + 60)
      yield* killed("10.0.0.8:34431", 600)

      const gateway = yield* startGateway(database)
      const view = yield* eventually(
        gateway.ops.ops.cluster(),
        (view) => !view.runners.some((r) => r.address === "10.0.0.7:34431"),
        30_000
      )
      const dead = view.runners.filter((r) => !r.healthy).map((r) => r.address)
      assert.deepStrictEqual(dead, ["10.0.0.8:34431"])
    }), { timeout: 60_000 })
})
