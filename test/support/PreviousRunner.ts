/**
 * A runner of the previous release beside this release's processes, as during a rolling upgrade
 * (docs/operations.md, "Rolling upgrade"): it joins the cluster on the same database and hosts
 * the number entities, answering with the messages of the previous release. Only the RPCs a test
 * names are served.
 */
import * as Entity from "@effect/cluster/Entity"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as Rpc from "@effect/rpc/Rpc"
import * as E from "@wagate/domain/ApiError"
import { Limits } from "@wagate/domain/Limits"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Cluster from "../../apps/gateway/src/cluster/Cluster.js"
import { freePort } from "./Ports.js"
import type { DatabaseContext } from "./TestGateway.js"

/** A number's limits as the previous release answered them: without `pause_reason`. */
export const PreviousLimits = Limits.omit("pause_reason")
export type PreviousLimits = typeof PreviousLimits.Type

/** The number entity of the previous release, as far as the tests use it. */
export const PreviousNumberEntity = Entity.make("Number", [
  Rpc.make("Limits", { success: PreviousLimits, error: Schema.Union(E.Capacity, E.InternalError) })
])

/** Starts, for the scope, a runner of the previous release whose numbers all answer `limits`. */
export const start = (database: DatabaseContext, limits: PreviousLimits) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const address = Option.some(RunnerAddress.make("127.0.0.1", port))
    yield* Layer.build(
      PreviousNumberEntity.toLayer(Effect.succeed({ Limits: () => Effect.succeed(limits) })).pipe(
        Layer.provide(NodeClusterSocket.layer({
          storage: "sql",
          shardingConfig: { ...Cluster.sharding, runnerAddress: address, runnerListenAddress: address }
        })),
        Layer.provide(Layer.succeedContext(database))
      )
    )
  })
