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
 * it. Shorter lock timings move the shards of a killed runner in about 12 s instead of 27 s.
 */
export const sharding: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  shardsPerGroup: 300,
  shardLockExpiration: "10 seconds",
  shardLockRefreshInterval: "3 seconds"
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

