/**
 * The operator's view of the cluster (`GET /ops/v1/cluster`): runners and their shards and
 * entities, numbers by connection status with the reasons of those not WORKING, the webhook
 * backlog and its lag, and the age of the oldest unprocessed cluster message.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const ClusterRunner = Schema.Struct({
  address: Schema.String,
  healthy: Schema.Boolean,
  last_heartbeat: Schema.String,
  shards: Schema.Int.annotations({ description: "Shards the runner owns, by its last report" }),
  entities: Schema.NullOr(Schema.Int).annotations({ description: "Entities it runs (null: no report)" }),
  waiting_for_runners: Schema.NullOr(Schema.Int).annotations({
    description: "At a cold start, the runners it waits for before it takes shards (CLUSTER_MIN_RUNNERS); null when it is not waiting"
  }),
  reported_at: Schema.NullOr(Schema.String)
})

/** @since 1.0.0 */
export const ClusterView = Schema.Struct({
  time: Schema.String,
  shards_per_group: Schema.Int,
  runners: Schema.Array(ClusterRunner),
  unassigned_shards: Schema.Int.annotations({ description: "Shards no reporting runner owns" }),
  numbers: Schema.Struct({
    by_status: Schema.Record({ key: Schema.String, value: Schema.Int }),
    not_working: Schema.Array(Schema.Struct({
      id: Schema.Int,
      phone: Schema.String,
      status: Schema.String,
      reason: Schema.NullOr(Schema.String)
    })).annotations({ description: "Linked numbers not WORKING, at most 100" })
  }),
  webhooks: Schema.Struct({
    backlog: Schema.Int.annotations({ description: "Events neither delivered nor failed" }),
    lag_seconds: Schema.NullOr(Schema.Number).annotations({ description: "Age of the oldest of them" })
  }),
  cluster_messages: Schema.Struct({
    unprocessed: Schema.Int,
    oldest_age_seconds: Schema.NullOr(Schema.Number)
  })
}).annotations({ identifier: "ClusterView" })
