/**
 * The cluster this process joins. Numbers and accounts are entities sharded over the runners;
 * an `api` process only holds clients. With the embedded database there is one process, which
 * hosts every shard itself.
 *
 * On PostgreSQL, @effect/cluster creates its tables (`cluster_*`) when its storage is built, with
 * statements that collide when two processes run them at once: every process of a deployment
 * started together on a fresh database would. They are built under the database's start-up lock
 * (`Database.StartupLock`), which the gateway's migrations take too.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as Database from "@wagate/store/Database"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { GatewaySettings } from "../Config.js"
import * as MachineIds from "./MachineIds.js"
import * as StartGate from "./StartGate.js"

/**
 * Must be identical on every node, api nodes included: lock numbers and shard ids derive from
 * it, and a node with other timings would judge the others' liveness differently. They are
 * constants of the code, not settings, so every node of one release has the same.
 *
 * Failover after kill -9 of a runner (docs/operations.md): PostgreSQL ends the dead runner's
 * sessions and frees its advisory locks as soon as its connections drop; within a second
 * another runner's RunnerLiveness sees it has no session left and marks it unhealthy; the
 * others drop it from the ring within 1 s, take its shards, and NumberWaker reconnects its
 * numbers. The lock expiration is only the fallback for a runner whose session outlives it.
 *
 * The refresh interval (at most a third of the expiration) is also the time any shard lock
 * operation may take: one that takes longer makes @effect/cluster rebuild the runner's lock
 * connection, which ends the session holding its advisory locks, so the runner loses every shard
 * at once and all its numbers move and reconnect (and, under load, the next refresh is late too).
 * 10 s keeps a runner starved of CPU (a busy host, a GC pause, a thousand numbers reconnecting)
 * from dropping its shards; nothing waits on it in a failover or a graceful stop.
 */
export const sharding: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  shardsPerGroup: 300,
  shardLockExpiration: "30 seconds",
  shardLockRefreshInterval: "10 seconds",
  refreshAssignmentsInterval: "1 second",
  runnerHealthCheckInterval: "2 seconds",
  // A call to an entity of this same process is handed over as it is: by default the cluster
  // encodes and decodes its payload as if it went to another runner, on every send.
  simulateRemoteSerialization: false
}

/** Whether this process hosts entities. */
export const hostsEntities = (settings: GatewaySettings) => settings.role !== "api"

export const layer = (settings: GatewaySettings, database: "postgres" | "embedded") => {
  if (database === "embedded") {
    return SingleRunner.layer({ runnerStorage: "memory", shardingConfig: sharding })
  }
  if (!hostsEntities(settings)) {
    // The storage `sql` gives, built under the database's start-up lock.
    return NodeClusterSocket.layer({ clientOnly: true, storage: "byo", shardingConfig: sharding }).pipe(
      Layer.provideMerge(Layer.orDie(Database.madeAlone(Layer.merge(SqlMessageStorage.layer, SqlRunnerStorage.layer)))),
      Layer.provide(ShardingConfig.layerFromEnv(sharding)),
      // A machine id apart from the runners' and the other api processes', on the generator the
      // cluster builds from the same layer (MachineIds).
      Layer.merge(MachineIds.apiMachineId.pipe(Layer.provide(Snowflake.layerGenerator)))
    )
  }
  const shardingConfig = {
    ...sharding,
    runnerAddress: Option.some(RunnerAddress.make(settings.runnerHost, settings.runnerPort)),
    runnerListenAddress: Option.some(RunnerAddress.make(settings.runnerListenHost, settings.runnerPort))
  }
  // The storage `sql` gives, with the runner storage behind the cold start's gate (whose state
  // the runner's report reads); built under the database's start-up lock.
  return NodeClusterSocket.layer({ storage: "byo", shardingConfig }).pipe(
    Layer.provideMerge(Layer.orDie(Database.madeAlone(Layer.merge(
      SqlMessageStorage.layer,
      StartGate.layer({
        minRunners: settings.clusterMinRunners,
        waitMs: settings.clusterStartWaitMs,
        self: `${settings.runnerHost}:${settings.runnerPort}`
      })
    )))),
    Layer.provide(ShardingConfig.layerFromEnv(shardingConfig))
  )
}

