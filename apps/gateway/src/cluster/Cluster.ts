/**
 * The cluster this process joins. Numbers and accounts are entities sharded over the runners;
 * an `api` process only holds clients. With the embedded database there is one process, which
 * hosts every shard itself.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import type * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as Option from "effect/Option"
import type { GatewaySettings } from "../Config.js"

/**
 * Must be identical on every node, api nodes included: lock numbers and shard ids derive from
 * it, and a node with other timings would judge the others' liveness differently. They are
 * constants of the code, not settings, so every node of one release has the same.
 *
 * Failover after kill -9 of a runner (docs/operations.md): PostgreSQL frees the dead runner's
 * advisory locks as soon as its connections drop; the health check (a ping every 2 s, five
 * refused retries 0.5 s apart) marks it unhealthy, or its heartbeat ages past the 5 s lock
 * expiration when the health check itself lived on it; the others see the change within 1 s,
 * take its shards, and NumberWaker reconnects its numbers. A runner that stalls (GC pause, CPU
 * starvation, a slow database) for longer than the expiration loses its place in the ring for
 * a while, but never its locks: nobody owns a shard twice, its numbers only pause.
 */
export const sharding: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  shardsPerGroup: 300,
  shardLockExpiration: "5 seconds",
  shardLockRefreshInterval: "1500 millis",
  refreshAssignmentsInterval: "1 second",
  runnerHealthCheckInterval: "2 seconds"
}

/** Whether this process hosts entities. */
export const hostsEntities = (settings: GatewaySettings) => settings.role !== "api"

export const layer = (settings: GatewaySettings, database: "postgres" | "embedded") => {
  if (database === "embedded") {
    return SingleRunner.layer({ runnerStorage: "memory", shardingConfig: sharding })
  }
  if (!hostsEntities(settings)) {
    return NodeClusterSocket.layer({ clientOnly: true, storage: "sql", shardingConfig: sharding })
  }
  return NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      ...sharding,
      runnerAddress: Option.some(RunnerAddress.make(settings.runnerHost, settings.runnerPort)),
      runnerListenAddress: Option.some(RunnerAddress.make(settings.runnerListenHost, settings.runnerPort))
    }
  })
}

