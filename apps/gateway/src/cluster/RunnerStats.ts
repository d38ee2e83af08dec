/**
 * A runner's report for the operator's cluster view: every few seconds it records the shards it
 * owns, how many entities it runs, the numbers of its shards that should run and whose entities it
 * has not started yet (`idle`: taken over, not yet woken) and, at a cold start, the runners it
 * still waits for before it takes shards (StartGate), and removes its row when it stops. The api
 * processes read these rows (`ClusterView`); runners serve no HTTP of their own.
 */
import { Sharding } from "@effect/cluster/Sharding"
import * as ShardId from "@effect/cluster/ShardId"
import * as SqlClient from "@effect/sql/SqlClient"
import { shardOf } from "@wagate/numbers/NumberSupervisor"
import { RunningNumbers } from "@wagate/numbers/RunningNumbers"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { Settings } from "../Config.js"
import { sharding as shardingSettings } from "./Cluster.js"
import { StartGateState } from "./StartGate.js"

/** How often a runner reports. */
export const REPORT_INTERVAL = "5 seconds"

export const RunnerStats = Layer.scopedDiscard(Effect.gen(function*() {
  const sharding = yield* Sharding
  const { runnerHost, runnerPort } = yield* Settings
  const sql = yield* SqlClient.SqlClient
  const states = yield* NumberStates
  const running = yield* RunningNumbers
  // The single runner of the embedded database has no gate.
  const gate = yield* Effect.serviceOption(StartGateState)
  // The address the cluster knows the runner by (cluster_runners.address).
  const address = `${runnerHost}:${runnerPort}`
  const startedAt = new Date()
  const shards = Array.from({ length: shardingSettings.shardsPerGroup ?? 300 }, (_, i) => ShardId.make("default", i + 1))

  const report = Effect.gen(function*() {
    const owned = shards.filter((shard) => sharding.hasShardId(shard)).map((shard) => shard.id)
    const entities = yield* sharding.activeEntityCount
    const held = new Set(owned)
    const idle = (yield* states.live()).filter((id) => held.has(shardOf(sharding, id).id) && !running.has(id))
    const waitingFor = Option.isSome(gate) ? gate.value.waitingFor() : null
    yield* sql`
      INSERT INTO runner_stats (address, shards, entities, idle, waiting_for, started_at, reported_at)
      VALUES (${address}, ${`{${owned.join(",")}}`}::integer[], ${entities}, ${`{${idle.join(",")}}`}::integer[],
        ${waitingFor}, ${startedAt}, now())
      ON CONFLICT (address) DO UPDATE SET shards = EXCLUDED.shards, entities = EXCLUDED.entities, idle = EXCLUDED.idle,
        waiting_for = EXCLUDED.waiting_for, started_at = EXCLUDED.started_at, reported_at = EXCLUDED.reported_at`
  })

  yield* Effect.addFinalizer(() =>
    sql`DELETE FROM runner_stats WHERE address = ${address}`.pipe(Effect.timeout("2 seconds"), Effect.ignore)
  )
  yield* report.pipe(
    Effect.catchAllCause((cause) => Effect.logDebug("runner report failed", cause)),
    Effect.repeat(Schedule.spaced(REPORT_INTERVAL)),
    Effect.forkScoped
  )
}))
