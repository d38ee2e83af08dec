/**
 * The cluster keeps every persisted message with its reply after it was processed
 * (`cluster_messages`, `cluster_replies`): a number's keep-alive message each time the number
 * starts on a runner (a restart, a failover, a shard moving in a rolling restart), an export's
 * run. @effect/cluster never deletes them, so the tables would grow with every restart for as long
 * as the gateway runs. Every process that hosts entities deletes processed messages older than a
 * week every hour, in batches. Unprocessed messages are never touched: they are work still to do.
 */
import * as MachineId from "@effect/cluster/MachineId"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import { decoded } from "@wagate/store/Rows"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Upkeep from "./Upkeep.js"

/** How long a processed message is kept: a week, long past any retry of it. */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000

const BATCH = 5_000

const Deleted = Schema.Struct({ requests: Schema.Number })

/** Deletes the processed messages (with their replies) older than the retention; returns how many. */
export const sweep = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Message ids are the cluster's snowflakes, which begin with their creation time.
  const before = String(Snowflake.make({ timestamp: (yield* Clock.currentTimeMillis) - RETENTION_MS, machineId: MachineId.make(0), sequence: 0 }))
  // A request goes with its replies and the acknowledgements and interruptions sent for it.
  return yield* Upkeep.inBatches(
    BATCH,
    Effect.map(
      decoded(Deleted, sql`
        WITH old AS (
          SELECT id FROM cluster_messages
          WHERE processed AND kind = 0 AND id < ${before}::bigint
          ORDER BY id LIMIT ${BATCH}
        ), replies AS (
          DELETE FROM cluster_replies WHERE request_id IN (SELECT id FROM old)
        ), messages AS (
          DELETE FROM cluster_messages WHERE request_id IN (SELECT id FROM old)
        )
        SELECT count(*)::int AS requests FROM old`),
      ([row]) => row.requests
    )
  )
})

export const layer = Upkeep.every("1 hour", "deleting processed cluster messages", sweep)
