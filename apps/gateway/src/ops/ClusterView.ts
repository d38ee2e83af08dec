/**
 * The operator's view of the cluster, read from PostgreSQL by any api process: the runners the
 * cluster knows (`cluster_runners`) with what each last reported (`runner_stats`), numbers by
 * status, the webhook backlog and the oldest cluster message waiting to be processed.
 */
import * as Entity from "@effect/cluster/Entity"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ClusterView as View } from "@wagate/domain/ClusterView"
import { Instant, Int8, NullOrInstant, NullOrString } from "@wagate/store/Columns"
import { decoded } from "@wagate/store/Rows"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { sharding } from "../cluster/Cluster.js"

const SHARDS = sharding.shardsPerGroup ?? 300
/** Reports older than this are from runners that are gone. */
const STALE_SECONDS = 20

const RunnerRow = Schema.Struct({ address: Schema.String, healthy: Schema.Boolean, last_heartbeat: Instant })
const ReportRow = Schema.Struct({
  address: Schema.String,
  shards: Schema.Array(Schema.Number),
  entities: Schema.Number,
  waiting_for: Schema.NullOr(Schema.Number),
  reported_at: Instant
})
const StatusCount = Schema.Struct({ status: Schema.String, n: Int8 })
const NotWorkingRow = Schema.Struct({ id: Int8, phone: Schema.String, status: Schema.String, status_reason: NullOrString })
const BacklogRow = Schema.Struct({ backlog: Int8, oldest: NullOrInstant })
const UnprocessedRow = Schema.Struct({ unprocessed: Int8, oldest: NullOrString })

export class ClusterView extends Effect.Service<ClusterView>()("@wagate/gateway/ClusterView", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // The cluster's tables exist once a runner (or the single runner) has started: until then a
    // statement on them fails, and reads as nothing.
    const orEmpty = <A>(query: Effect.Effect<ReadonlyArray<A>, SqlError>) =>
      query.pipe(Effect.catchTag("SqlError", () => Effect.succeed<ReadonlyArray<A>>([])))

    const read = Effect.gen(function*() {
      const runners = yield* orEmpty(decoded(RunnerRow,
        sql`SELECT address, healthy, last_heartbeat FROM cluster_runners ORDER BY address`
      ))
      const reports = yield* decoded(ReportRow,
        sql`
          SELECT address, shards, entities, waiting_for, reported_at FROM runner_stats
          WHERE reported_at > now() - make_interval(secs => ${STALE_SECONDS})`
      )
      const byAddress = new Map(reports.map((r) => [r.address, r]))
      const owned = new Set(reports.flatMap((r) => r.shards))
      const statuses = yield* decoded(StatusCount,
        sql`SELECT status, count(*) AS n FROM numbers WHERE deleted_at IS NULL GROUP BY status`
      )
      const notWorking = yield* decoded(NotWorkingRow,
        sql`
          SELECT id, phone, status, status_reason FROM numbers
          WHERE deleted_at IS NULL AND linked AND status <> 'WORKING' ORDER BY id LIMIT 100`
      )
      const [webhooks] = yield* decoded(BacklogRow,
        sql`
          SELECT count(*) AS backlog, min(created_at) AS oldest FROM webhook_outbox
          WHERE delivered_at IS NULL AND failed_at IS NULL`
      )
      // A linked number's keep-alive request stays unprocessed for as long as the number runs (its
      // entity answers it only when the number stops): it is no work waiting, and is left out.
      const [messages] = yield* orEmpty(decoded(UnprocessedRow,
        sql`
          SELECT count(*) AS unprocessed, min(id)::text AS oldest FROM cluster_messages
          WHERE NOT processed AND tag IS DISTINCT FROM ${Entity.KeepAliveRpc._tag}`
      ))
      const now = Date.now()
      const oldestMessage = messages?.oldest ? Snowflake.timestamp(Snowflake.Snowflake(messages.oldest)) : null
      return {
        time: new Date(now).toISOString(),
        shards_per_group: SHARDS,
        runners: runners.map((r) => {
          const report = byAddress.get(r.address)
          return {
            address: r.address,
            healthy: r.healthy,
            last_heartbeat: r.last_heartbeat.toISOString(),
            shards: report?.shards.length ?? 0,
            entities: report?.entities ?? null,
            waiting_for_runners: report?.waiting_for ?? null,
            reported_at: report ? report.reported_at.toISOString() : null
          }
        }),
        unassigned_shards: SHARDS - owned.size,
        numbers: {
          by_status: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
          not_working: notWorking.map((n) => ({
            id: n.id,
            phone: n.phone,
            status: n.status,
            reason: n.status_reason
          }))
        },
        webhooks: {
          backlog: webhooks.backlog,
          lag_seconds: webhooks.oldest === null ? null : Math.max(0, (now - webhooks.oldest.getTime()) / 1000)
        },
        cluster_messages: {
          unprocessed: messages?.unprocessed ?? 0,
          oldest_age_seconds: oldestMessage === null ? null : Math.max(0, (now - oldestMessage) / 1000)
        }
      } satisfies typeof View.Type
    }).pipe(Effect.orDie, Effect.withSpan("ClusterView.read"))

    return { read } as const
  })
}) {}
