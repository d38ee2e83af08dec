/**
 * The cluster keeps every persisted message with its reply after it was processed
 * (`cluster_messages`, `cluster_replies`): a number's keep-alive message each time the number
 * starts on a runner (a restart, a failover, a shard moving in a rolling restart), an export's
 * run. @effect/cluster never deletes them, so the tables would grow with every restart for as long
 * as the gateway runs. Every process that hosts entities deletes processed messages older than a
 * week every hour, in batches. Unprocessed messages are never touched: they are work still to do.
 *
 * A runner that stops gracefully deletes its row in `cluster_runners`; one that was killed leaves
 * it, marked unhealthy (RunnerLiveness), and the cluster only drops such rows when another runner
 * stops gracefully. Where runners get a new address at every start (a pod's IP), the operator's
 * view and the `wagate_runner_healthy` series would list every dead runner for months. So the same
 * round forgets runners that have not renewed their heartbeat for an hour: the cluster itself
 * ignores them after 30 s, and an hour leaves the operator time to see which one died.
 */
import * as MachineId from "@effect/cluster/MachineId"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import { decoded } from "@wagate/store/Rows"
import { DatabaseKind } from "@wagate/store/Database"
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

/** How long a runner that stopped renewing its heartbeat stays listed: an hour. */
export const GONE_RUNNER_SECONDS = 60 * 60

const Forgotten = Schema.Struct({ address: Schema.String, last_heartbeat: Schema.String })

/** Deletes the rows of runners without a heartbeat for `GONE_RUNNER_SECONDS`; logs each. */
export const forgetGoneRunners = Effect.gen(function*() {
  // The embedded database's single runner keeps its runner storage in memory: no table.
  if ((yield* DatabaseKind) === "embedded") return
  const sql = yield* SqlClient.SqlClient
  // `last_heartbeat` is written by the cluster as NOW() in a column without a time zone, and
  // read against NOW() the same way (SqlRunnerStorage).
  const gone = yield* decoded(Forgotten, sql`
    DELETE FROM cluster_runners
    WHERE last_heartbeat < NOW() - make_interval(secs => ${GONE_RUNNER_SECONDS})
    RETURNING address, last_heartbeat::text`)
  for (const runner of gone) {
    yield* Effect.logInfo(`forgot runner ${runner.address}: no heartbeat since ${runner.last_heartbeat}`)
  }
})

export const layer = Upkeep.every(
  "1 hour",
  "deleting processed cluster messages and gone runners",
  Effect.zipRight(sweep, forgetGoneRunners)
)
