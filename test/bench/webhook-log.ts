/**
 * The webhook delivery log (GET /webhook/deliveries) of a quiet account on a busy gateway. Every
 * account's events share one table; a quiet account's events are older than the busy accounts'
 * newer ones, so a list that walks the table's newest events first reads past all of those before
 * it finds the quiet account's. The gateway runs as `npm start` runs it, on PostgreSQL; the
 * events are seeded in bulk (the busy account's `--events`, 2,000,000 by default, after the
 * quiet account's `--quiet`, 20,000), as thirty days of the log (`WEBHOOK_LOG_RETENTION_DAYS`)
 * of a gateway at a few hundred events a second would hold. The baseline, in the same run: the
 * same list of the busy account, whose events are the newest.
 *
 *   npm run bench -- webhook-log [--events 2000000] [--quiet 20000] [--requests 200]
 *
 * Target: the quiet account's median, unfiltered and `status=delivered`, at most twice the busy
 * account's (a ratio, so that it holds on a busy machine too; its p99 is printed beside it); a miss
 * exits non-zero (`--no-fail` turns that off). Results: docs/performance.md.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as Database from "@wagate/store/Database"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { parseArgs } from "node:util"
import { provision } from "../support/Fixtures.js"
import { OPERATOR_TOKEN, startGateway } from "./support/Gateway.js"
import { machine } from "./support/Processes.js"
import * as Timing from "./support/Timing.js"
import * as Verdict from "./support/Verdict.js"

/** The quiet account's median against the busy account's, at most. */
const TARGET_RATIO = 2

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      events: { type: "string", default: "2000000" },
      quiet: { type: "string", default: "20000" },
      requests: { type: "string", default: "200" }
    }
  })
  return { events: Number(values.events), quiet: Number(values.quiet), requests: Number(values.requests) }
}

/** `requests` GETs of `path` one after another (after ten to warm up): p50 and p99 in ms. */
const latencies = (url: string, key: string, path: string, requests: number) =>
  Timing.sequential(
    Effect.promise(async () => {
      const response = await fetch(`${url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } })
      const body = await response.json() as { deliveries?: Array<unknown> }
      if (response.status !== 200 || !Array.isArray(body.deliveries) || body.deliveries.length === 0) {
        throw new Error(`GET ${path}: ${response.status} ${JSON.stringify(body).slice(0, 200)}`)
      }
    }),
    { warmup: 10, runs: requests }
  )

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(`webhook log benchmark: ${opts.events} events of a busy account after ${opts.quiet} of a quiet one; ${machine()}`)
    const url = yield* Database.scratchDatabase
    const gateway = yield* startGateway("gateway", { DATABASE_URL: url })
    const ops = yield* OpsClient.make({ baseUrl: gateway.url, token: OPERATOR_TOKEN })
    const [quiet, busy] = yield* Effect.all([provision(ops, { numbers: 0 }), provision(ops, { numbers: 0 })])

    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
    const started = Date.now()
    // The quiet account's events first: the busy account's all come after them.
    for (const [accountId, count, daysAgo] of [[quiet.accountId, opts.quiet, 20], [busy.accountId, opts.events, 10]] as const) {
      yield* sql`
        INSERT INTO webhook_outbox (account_id, event, payload, created_at, attempts, delivered_at, last_status)
        SELECT ${accountId}, 'message.sent', '{"event":"message.sent","timestamp":0,"data":{}}',
               now() - make_interval(days => ${daysAgo}) + g * interval '1 ms', 1,
               now() - make_interval(days => ${daysAgo}) + g * interval '1 ms', 200
        FROM generate_series(1, ${count}) g`
    }
    yield* sql`ANALYZE webhook_outbox`
    yield* Console.log(`seeded in ${Date.now() - started} ms`)

    const checks: Array<Verdict.Check> = []
    for (const [label, path] of [["unfiltered", "/webhook/deliveries?limit=50"], ["status=delivered", "/webhook/deliveries?limit=50&status=delivered"]] as const) {
      const baseline = yield* latencies(gateway.url, busy.accountKey, path, opts.requests)
      const measured = yield* latencies(gateway.url, quiet.accountKey, path, opts.requests)
      yield* Console.log(
        `${label}: quiet account p50 ${measured.p50.toFixed(1)} ms, p99 ${measured.p99.toFixed(1)} ms; ` +
          `busy account p50 ${baseline.p50.toFixed(1)} ms, p99 ${baseline.p99.toFixed(1)} ms`
      )
      checks.push(Timing.medianAtMost(
        `GET /webhook/deliveries ${label}, quiet account: median vs the busy account's`,
        TARGET_RATIO,
        measured,
        baseline,
        "busy account"
      ))
    }
    yield* Verdict.verdict("webhook-log", checks)
  })).pipe(Effect.provide([NodeHttpClient.layerUndici, Reactivity.layer]))
