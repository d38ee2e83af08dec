/**
 * The hourly deletion of the old webhook delivery log (WebhookLogUpkeep) on a gateway where one
 * account holds events: its endpoint is turned off, so its events wait, neither delivered nor
 * failed, for as long as it stays off, and they are never deleted. The sweep looks, account by
 * account, for events finished before the retention's cut-off; read through the events by account
 * and creation time, it went through every held event older than the cut-off first, in each
 * batch of every run, although none of them can go. On PostgreSQL: `--accounts` accounts
 * (1,000) with 20 events each, delivered within the retention period, so that a run has nothing
 * to delete; the sweep runs `--runs` times (after two to warm up) before and after the first
 * account is given `--held` events (1,000,000) older than the cut-off. The baseline, in the same
 * run: the sweep before the held events.
 *
 *   npm run bench -- webhook-log-upkeep [--accounts 1000] [--held 1000000] [--runs 10]
 *
 * Target: the sweep's median with the held events at most three times its median without them (a
 * ratio, so that it holds on a busy machine too); a miss exits non-zero (`--no-fail` turns that
 * off). Results: docs/performance.md, "The webhook log upkeep and held events".
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { parseArgs } from "node:util"
import * as WebhookLogUpkeep from "../../apps/gateway/src/WebhookLogUpkeep.js"
import { machine } from "./support/Processes.js"
import * as Timing from "./support/Timing.js"
import * as Verdict from "./support/Verdict.js"

/**
 * The sweep's median with the held events against its median without them, at most. A run with
 * nothing to delete takes a few milliseconds (0.4x with the held events, a run of this benchmark);
 * reading the held events cost 133x, and compiling the statement (JIT) 21x.
 */
const TARGET_RATIO = 3

const RETENTION_DAYS = 30

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      accounts: { type: "string", default: "1000" },
      held: { type: "string", default: "1000000" },
      runs: { type: "string", default: "10" }
    }
  })
  return { accounts: Number(values.accounts), held: Number(values.held), runs: Number(values.runs) }
}

/** `runs` sweeps one after another (after two to warm up): p50 and p99 in ms; each must delete nothing. */
const latencies = (runs: number) =>
  Timing.sequential(
    Effect.gen(function*() {
      const deleted = yield* WebhookLogUpkeep.sweep(RETENTION_DAYS)
      if (deleted !== 0) return yield* Effect.dieMessage(`the sweep deleted ${deleted} events; nothing is old enough`)
    }),
    { warmup: 2, runs }
  )

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(
      `webhook log upkeep benchmark: ${opts.accounts} accounts, ${opts.held} held events of one of them; ${machine()}`
    )
    const url = yield* Database.scratchDatabase
    const env = yield* Layer.build(Database.layerPostgres({ url: Redacted.make(url), maxConnections: 2 }))
    const sql = yield* Effect.provide(SqlClient.SqlClient, env)
    let started = Date.now()
    yield* sql`
      INSERT INTO accounts (email, company)
      SELECT 'upkeep-bench-' || g || '@example.test', 'bench' FROM generate_series(1, ${opts.accounts}) g`
    yield* sql`
      INSERT INTO webhook_outbox (account_id, event, payload, created_at, attempts, delivered_at, last_status)
      SELECT a.id, 'message.sent', '{"event":"message.sent","timestamp":0,"data":{}}',
             now() - interval '10 days' + g * interval '1 s', 1, now() - interval '10 days' + g * interval '1 s', 200
      FROM accounts a, generate_series(1, 20) g`
    yield* sql`VACUUM ANALYZE webhook_outbox`
    yield* Console.log(`seeded ${opts.accounts} accounts in ${Date.now() - started} ms`)
    const baseline = yield* Effect.provide(latencies(opts.runs), env)

    started = Date.now()
    // The first account's endpoint has been off for weeks: its events wait, older than the cut-off.
    yield* sql`
      INSERT INTO webhook_outbox (account_id, event, payload, created_at, attempts)
      SELECT (SELECT min(id) FROM accounts), 'message.received', '{"event":"message.received","timestamp":0,"data":{}}',
             now() - make_interval(days => ${RETENTION_DAYS + 20}) + g * interval '1 s', 0
      FROM generate_series(1, ${opts.held}) g`
    yield* sql`VACUUM ANALYZE webhook_outbox`
    yield* Console.log(`seeded ${opts.held} held events in ${Date.now() - started} ms`)
    const measured = yield* Effect.provide(latencies(opts.runs), env)
    const [kept] = yield* sql<{ n: string }>`
      SELECT count(*)::text AS n FROM webhook_outbox WHERE delivered_at IS NULL AND failed_at IS NULL`
    if (Number(kept!.n) !== opts.held) return yield* Effect.dieMessage(`held events kept: ${kept!.n} of ${opts.held}`)

    yield* Console.log(
      `sweep with nothing to delete: with the held events p50 ${measured.p50.toFixed(1)} ms, p99 ${measured.p99.toFixed(1)} ms; ` +
        `without them p50 ${baseline.p50.toFixed(1)} ms, p99 ${baseline.p99.toFixed(1)} ms`
    )
    yield* Verdict.verdict("webhook-log-upkeep", [
      Timing.medianAtMost(
        `hourly webhook log sweep, nothing to delete, ${opts.held} held events: median vs without them`,
        TARGET_RATIO,
        measured,
        baseline,
        "no held events"
      )
    ])
  }))
