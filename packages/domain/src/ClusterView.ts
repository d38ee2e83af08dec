/**
 * The operator's view of the cluster (`GET /ops/v1/cluster`): runners and their shards and
 * entities, numbers by connection status with the reasons of those not WORKING, the numbers that
 * should run and that no runner runs (their shard held by no healthy runner, or taken over and not
 * yet woken), the webhook backlog and its lag, and the age of the oldest unprocessed cluster
 * message.
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
  waking: Schema.NullOr(Schema.Int).annotations({
    description: "Numbers of its shards that should run and whose entities it has not started yet (taken over, not yet woken); null: no report"
  }),
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
    by_status: Schema.Record({ key: Schema.String, value: Schema.Int }).annotations({
      description: "Numbers by the status they last stored, except those that should run and that no runner runs: " +
        "WAITING_FOR_RUNNER (no healthy runner holds their shard) and WAKING (their shard's runner has not started them yet)"
    }),
    not_running: Schema.Array(Schema.Struct({
      id: Schema.Int,
      phone: Schema.String,
      status: Schema.String.annotations({ description: "The status it last stored (what it was before its shard moved)" }),
      shard: Schema.Int,
      runner: Schema.NullOr(Schema.String).annotations({
        description: "The runner holding its shard that has not started it yet (WAKING); null: no healthy runner holds it (WAITING_FOR_RUNNER)"
      })
    })).annotations({ description: "The numbers counted WAITING_FOR_RUNNER or WAKING, at most 100" }),
    not_working: Schema.Array(Schema.Struct({
      id: Schema.Int,
      phone: Schema.String,
      status: Schema.String,
      reason: Schema.NullOr(Schema.String),
      linked: Schema.Boolean.annotations({
        description: "false: its device is no longer linked (logged out from the phone): link it again"
      })
    })).annotations({
      description: "Numbers not WORKING that are linked or stopped with a reason (logged out from the phone), at most 100"
    })
  }),
  webhooks: Schema.Struct({
    backlog: Schema.Int.annotations({
      description: "Events neither delivered nor failed, of accounts whose endpoint is on (the others' wait until it is on again)"
    }),
    lag_seconds: Schema.NullOr(Schema.Number).annotations({ description: "Age of the oldest of them" }),
    held_accounts: Schema.Int.annotations({ description: "Accounts whose endpoint is turned off with events waiting for it" })
  }),
  cluster_messages: Schema.Struct({
    unprocessed: Schema.Int,
    oldest_age_seconds: Schema.NullOr(Schema.Number)
  })
}).annotations({ identifier: "ClusterView" })
