/**
 * The operator's view of the cluster, read from PostgreSQL by any api process: the runners the
 * cluster knows (`cluster_runners`) with what each last reported (`runner_stats`), numbers by
 * status, the webhook backlog and the oldest cluster message waiting to be processed.
 *
 * A number stores its status only when it changes, and one whose entity moves to another runner
 * keeps the status it had (no STARTING write for a move: churn). So the view does not take the
 * stored status of a number that should run (linked, or being linked) on trust: one whose shard
 * no healthy runner reports holding counts as WAITING_FOR_RUNNER, one whose shard's runner has
 * not started its entity yet (taken over, not yet woken) as WAKING, and both are listed.
 */
import * as Entity from "@effect/cluster/Entity"
import { Sharding } from "@effect/cluster/Sharding"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ClusterView as View } from "@wagate/domain/ClusterView"
import { shardOf } from "@wagate/numbers/NumberSupervisor"
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
  idle: Schema.NullOr(Schema.Array(Schema.Number)),
  waiting_for: Schema.NullOr(Schema.Number),
  reported_at: Instant
})
const StatusCount = Schema.Struct({ status: Schema.String, n: Int8 })
const NotWorkingRow = Schema.Struct({
  id: Int8,
  phone: Schema.String,
  status: Schema.String,
  status_reason: NullOrString,
  linked: Schema.Boolean
})
const LiveRow = Schema.Struct({ id: Int8, phone: Schema.String, status: Schema.String })
/** Numbers listed at most, in each list. */
const LISTED = 100
const BacklogRow = Schema.Struct({ backlog: Int8, oldest: NullOrInstant, held_accounts: Int8 })
const UnprocessedRow = Schema.Struct({ unprocessed: Int8, oldest: NullOrString })

export class ClusterView extends Effect.Service<ClusterView>()("@wagate/gateway/ClusterView", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sharding = yield* Sharding

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
          SELECT address, shards, entities, idle, waiting_for, reported_at FROM runner_stats
          WHERE reported_at > now() - make_interval(secs => ${STALE_SECONDS})`
      )
      const byAddress = new Map(reports.map((r) => [r.address, r]))
      const owned = new Set(reports.flatMap((r) => r.shards))
      // The runner holding each shard: by the reports, but not a runner the cluster counts
      // unhealthy (it is being dropped from the ring). The single runner of the embedded database
      // is in no cluster_runners.
      const unhealthy = new Set(runners.filter((r) => !r.healthy).map((r) => r.address))
      const holder = new Map<number, typeof ReportRow.Type>()
      for (const r of reports) if (!unhealthy.has(r.address)) for (const shard of r.shards) holder.set(shard, r)
      const idle = new Set(reports.flatMap((r) => unhealthy.has(r.address) ? [] : r.idle ?? []))
      // The numbers that should run (as NumberStates.live, which the runners wake) one by one, the
      // others by their stored status.
      const live = sql`(linked OR status IN ('STARTING', 'SCAN_QR_CODE'))`
      const statuses = yield* decoded(StatusCount,
        sql`SELECT status, count(*) AS n FROM numbers WHERE deleted_at IS NULL AND NOT ${live} GROUP BY status`
      )
      const liveNumbers = yield* decoded(LiveRow,
        sql`SELECT id, phone, status FROM numbers WHERE deleted_at IS NULL AND ${live} ORDER BY id`
      )
      const byStatus: Record<string, number> = Object.fromEntries(statuses.map((s) => [s.status, s.n]))
      const notRunning: Array<typeof View.Type["numbers"]["not_running"][number]> = []
      for (const n of liveNumbers) {
        const shard = shardOf(sharding, n.id).id
        const runner = holder.get(shard)
        const waiting = runner === undefined ? "WAITING_FOR_RUNNER" : idle.has(n.id) ? "WAKING" : undefined
        const status = waiting ?? n.status
        byStatus[status] = (byStatus[status] ?? 0) + 1
        if (waiting !== undefined && notRunning.length < LISTED) {
          notRunning.push({ id: n.id, phone: n.phone, status: n.status, shard, runner: runner?.address ?? null })
        }
      }
      // A number logged out from its phone is no longer linked, but STOPPED with its reason: it
      // is listed, so the operator sees which number to link again.
      const notWorking = yield* decoded(NotWorkingRow,
        sql`
          SELECT id, phone, status, status_reason, linked FROM numbers
          WHERE deleted_at IS NULL AND status <> 'WORKING' AND (linked OR status_reason IS NOT NULL)
          ORDER BY id LIMIT ${LISTED}`
      )
      // The events of an account whose endpoint is turned off (by the account, or by the gateway
      // after failing for days) wait until it is on again, for as long as that takes: they are no
      // work the gateway is behind on, and are counted by account. Each account's waiting events
      // are read through their own index, account by account: counted together, PostgreSQL read
      // every waiting event, the held ones too (0.2 s at each scrape with a million held, 1 ms so).
      const [webhooks] = yield* decoded(BacklogRow,
        sql`
          SELECT coalesce(sum(w.n), 0) AS backlog, min(w.oldest) AS oldest,
                 (SELECT count(*) FROM webhook_endpoints d
                  WHERE NOT d.enabled AND EXISTS (
                    SELECT 1 FROM webhook_outbox h
                    WHERE h.account_id = d.account_id AND h.delivered_at IS NULL AND h.failed_at IS NULL)) AS held_accounts
          FROM webhook_endpoints e CROSS JOIN LATERAL (
            SELECT count(*) AS n, min(o.created_at) AS oldest FROM webhook_outbox o
            WHERE o.account_id = e.account_id AND o.delivered_at IS NULL AND o.failed_at IS NULL
          ) w
          WHERE e.enabled`
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
            waking: report ? report.idle?.length ?? 0 : null,
            waiting_for_runners: report?.waiting_for ?? null,
            reported_at: report ? report.reported_at.toISOString() : null
          }
        }),
        unassigned_shards: SHARDS - owned.size,
        numbers: {
          by_status: byStatus,
          not_running: notRunning,
          not_working: notWorking.map((n) => ({
            id: n.id,
            phone: n.phone,
            status: n.status,
            reason: n.status_reason,
            linked: n.linked
          }))
        },
        webhooks: {
          backlog: webhooks.backlog,
          lag_seconds: webhooks.oldest === null ? null : Math.max(0, (now - webhooks.oldest.getTime()) / 1000),
          held_accounts: webhooks.held_accounts
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
