/**
 * Webhook delivery: event-to-delivery lag and deliveries per second for 100 accounts at
 * 500 events/s, each account with its own endpoint on a local receiver. The gateway runs as
 * `npm start` runs it (its composition root in a process of its own, on PostgreSQL); this
 * process writes the events exactly as the number entities do (`Outbox.enqueue` inside a
 * transaction, one transaction per event, 16 writers) and receives the webhooks, so both ends of
 * the lag are read on one clock. An event's lag runs from the end of its COMMIT (when the event
 * exists) to the arrival of its request at the receiver. The baseline, independent of the
 * gateway's delivery: the writer itself posts each event to the receiver the moment its
 * transaction commits (plain fetch, keep-alive), on the same database work and the same machine;
 * the floor of what any deliverer could reach.
 *
 *   npx tsx test/bench/webhooks.ts [--accounts 100] [--rate 500] [--duration 20] [--warmup 3]
 *     [--baseline true] [--profile DIR]
 *
 * Target: p99 lag under 200 ms, every event delivered; a miss exits non-zero (`--no-fail` turns
 * that off). Results and how to read them: docs/performance.md.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as Database from "@wagate/store/Database"
import * as Outbox from "@wagate/store/Outbox"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { cpuSeconds, GATEWAY_NODE_ARGS, machine, REPO, rssMiB, scopedTs, waitReady } from "./support/Processes.js"
import { freePort } from "../support/Ports.js"
import * as Verdict from "./support/Verdict.js"

const OPERATOR_TOKEN = "wag_op_bench_operator_token"
/** Concurrent event writers, each with a connection of its own. */
const WRITERS = 16
const now = () => performance.timeOrigin + performance.now()

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      accounts: { type: "string", default: "100" },
      rate: { type: "string", default: "500" },
      duration: { type: "string", default: "20" },
      warmup: { type: "string", default: "3" },
      baseline: { type: "string", default: "true" },
      profile: { type: "string" }
    }
  })
  return {
    accounts: Number(values.accounts),
    rate: Number(values.rate),
    durationMs: Number(values.duration) * 1000,
    warmupMs: Number(values.warmup) * 1000,
    baseline: values.baseline !== "false",
    /** A directory for a CPU profile of the gateway (written when it stops). */
    profile: values.profile
  }
}

/** The local receiver: answers 200 at once and notes when each event arrived. */
const receiver = Effect.acquireRelease(
  Effect.async<{ port: number; arrivals: Map<string, number>; server: ReturnType<typeof createServer> }>((resume) => {
    const arrivals = new Map<string, number>()
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const at = now()
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        const key = body.data.status as string
        if (!arrivals.has(key)) arrivals.set(key, at)
        res.writeHead(200).end()
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as any).port, arrivals, server })))
  }),
  ({ server }) => Effect.sync(() => {
    server.closeAllConnections()
    server.close()
  })
)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!

interface Result {
  readonly name: string
  readonly sent: number
  readonly delivered: number
  readonly perSecond: number
  /** The rate the events were committed at (the target is `--rate`). */
  readonly writtenPerSecond: number
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly max: number
  readonly gatewayCores: number
  readonly rssMiB: number
  /** p99 of an event's transaction, from BEGIN to the end of COMMIT (before the lag starts). */
  readonly writeP99: number
}

/** One run: a fresh database and gateway, `accounts` endpoints, the load, then the figures. */
const runOnce = (name: string, env: Record<string, string>, opts: ReturnType<typeof options>, direct = false) =>
  Effect.scoped(Effect.gen(function*() {
    const database = yield* Layer.build(Database.layerTest)
    const pg = yield* Effect.provide(PgClient.PgClient, database)
    const [{ db }] = yield* pg<{ db: string }>`SELECT current_database() AS db`
    const serverUrl = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
    serverUrl.pathname = `/${db}`
    const port = yield* freePort
    const gateway = yield* scopedTs(name, join(REPO, "test/bench/support/GatewayProcess.ts"), {
      env: {
        HTTP_HOST: "127.0.0.1",
        HTTP_PORT: String(port),
        RUNNER_PORT: String(yield* freePort),
        OPERATOR_TOKEN,
        DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-bench-data-")),
        DATABASE_URL: serverUrl.toString(),
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WA_DRIVER: "simulator",
        ...env
      },
      nodeArgs: [...GATEWAY_NODE_ARGS, ...(opts.profile ? ["--cpu-prof", `--cpu-prof-dir=${opts.profile}`] : [])]
    })
    const url = `http://127.0.0.1:${port}`
    yield* waitReady(gateway, `${url}/api/status`)
    const sink = yield* receiver

    const http = yield* Layer.build(NodeHttpClient.layerUndici)
    const ops = yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN }).pipe(Effect.provide(http))
    const accounts: Array<number> = []
    for (let i = 0; i < opts.accounts; i++) {
      const account = yield* ops.ops.createAccount({ payload: { email: `bench-${i}@example.kz`, company: "Bench" } })
      yield* ops.opsWebhooks.set({ path: { id: account.id }, payload: { url: `http://127.0.0.1:${sink.port}/a/${account.id}` } })
      accounts.push(account.id)
    }

    // The writers' own pool, as large as the number of writers: an event's lag is counted from
    // its commit, and the writers must keep up with the rate on a loaded machine.
    const writerPg = yield* PgClient.make({ url: Redacted.make(serverUrl.toString()), maxConnections: WRITERS }).pipe(
      Effect.provide(Reactivity.layer)
    )
    // Event i is due at start + i / rate. A fixed set of writers, each with a connection of its
    // own, takes the events in turn and writes each at its due time (or at once when behind):
    // no pile of waiting fibers in this process, and the write rate reached is reported.
    const committed = new Map<string, number>()
    const writeMs: Array<number> = []
    const write = (i: number) => {
      const key = `${i}`
      const accountId = accounts[i % accounts.length]!
      return Effect.suspend(() => {
        const started = now()
        const event = Outbox.envelope("session.status", Date.now(), { status: key })
        return Outbox.enqueue(writerPg, accountId, event).pipe(
          writerPg.withTransaction,
          Effect.tap(() =>
            Effect.sync(() => {
              const at = now()
              committed.set(key, at)
              writeMs.push(at - started)
              // The baseline: the writer itself posts the event the moment it is committed.
              if (direct) {
                void fetch(`http://127.0.0.1:${sink.port}/a/${accountId}`, {
                  method: "POST",
                  headers: { "content-type": "application/json" },
                  body: JSON.stringify(event)
                }).then((r) => r.arrayBuffer(), () => undefined)
              }
            })
          )
        )
      })
    }
    const total = Math.round(((opts.warmupMs + opts.durationMs) / 1000) * opts.rate)
    const warmup = Math.round((opts.warmupMs / 1000) * opts.rate)
    const cpuBefore = cpuSeconds(gateway.pid)
    let peakRss = 0
    const sampler = setInterval(() => void (peakRss = Math.max(peakRss, rssMiB(gateway.pid))), 500)
    yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(sampler)))
    const begin = now()
    let next = 0
    const writer = Effect.gen(function*() {
      for (;;) {
        const i = next++
        if (i >= total) return
        const wait = begin + (i * 1000) / opts.rate - now()
        if (wait > 1) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, wait)))
        yield* Effect.orDie(write(i))
      }
    })
    const writesDone = yield* Effect.all(Array.from({ length: WRITERS }, () => writer), {
      concurrency: "unbounded",
      discard: true
    }).pipe(Effect.timeout(`${opts.warmupMs + opts.durationMs + 60_000} millis`), Effect.isSuccess)
    if (!writesDone) return yield* Effect.dieMessage(`the writers did not finish: ${committed.size} of ${total} committed`)
    const deadline = now() + 15_000
    while (sink.arrivals.size < total && now() < deadline) {
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
    }
    const cores = (cpuSeconds(gateway.pid) - cpuBefore) / ((now() - begin) / 1000)

    const measured = [...committed.entries()].filter(([key]) => Number(key) >= warmup)
    const lags = measured.flatMap(([key, at]) => {
      const arrived = sink.arrivals.get(key)
      return arrived === undefined ? [] : [arrived - at]
    }).sort((a, b) => a - b)
    const arrivals = measured.flatMap(([key]) => sink.arrivals.get(key) ?? []).sort((a, b) => a - b)
    const commits = measured.map(([, at]) => at).sort((a, b) => a - b)
    const span = (arrivals.at(-1)! - arrivals[0]!) / 1000
    const result: Result = {
      name,
      sent: measured.length,
      delivered: lags.length,
      perSecond: Math.round(arrivals.length / span),
      writtenPerSecond: Math.round(commits.length / ((commits.at(-1)! - commits[0]!) / 1000)),
      p50: percentile(lags, 0.5),
      p95: percentile(lags, 0.95),
      p99: percentile(lags, 0.99),
      max: lags.at(-1) ?? Number.NaN,
      gatewayCores: Math.round(cores * 100) / 100,
      rssMiB: Math.round(peakRss),
      writeP99: percentile(writeMs.sort((a, b) => a - b), 0.99)
    }
    return result
  }))

const header =
  "| gateway | events | written/s | delivered | deliveries/s | lag p50 ms | lag p95 ms | lag p99 ms | lag max ms | gateway cores | gateway RSS MiB | event write p99 ms |\n" +
  "|---|---|---|---|---|---|---|---|---|---|---|---|"
const row = (r: Result) =>
  `| ${r.name} | ${r.sent} | ${r.writtenPerSecond} | ${r.delivered} | ${r.perSecond} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.p99.toFixed(1)} | ` +
  `${r.max.toFixed(0)} | ${r.gatewayCores.toFixed(2)} | ${r.rssMiB} | ${r.writeP99.toFixed(1)} |`

export const main = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(`machine: ${machine()}`)
    yield* Console.log(
      `${opts.accounts} accounts, ${opts.rate} events/s for ${opts.durationMs / 1000} s after ${opts.warmupMs / 1000} s of warm-up\n`
    )
    yield* Console.log(header)
    const results = [yield* runOnce("LISTEN/NOTIFY + poll (default)", {}, opts)]
    yield* Console.log(row(results[0]!))
    if (opts.baseline) {
      // The gateway stays up (same database work, same endpoints) but delivers nothing during
      // the run: no LISTEN, a poll an hour away.
      results.push(
        yield* runOnce("baseline: the writer posts each event at commit", {
          WEBHOOK_LISTEN: "false",
          WEBHOOK_POLL_INTERVAL_MS: "3600000"
        }, opts, true)
      )
      yield* Console.log(row(results[1]!))
    }
    const [first, base] = results
    yield* Verdict.verdict("webhooks", [
      {
        what: `event-to-delivery lag p99 (${opts.accounts} accounts, ${opts.rate} events/s)`,
        target: "< 200 ms",
        measured: `${Verdict.fixed(first!.p99)} ms`,
        baseline: base === undefined ? "" : `${Verdict.fixed(base.p99)} ms`,
        met: first!.p99 < 200
      },
      {
        what: "measured events delivered",
        target: "all",
        measured: `${first!.delivered} of ${first!.sent}`,
        baseline: base === undefined ? "" : `${base.delivered} of ${base.sent}`,
        met: first!.delivered === first!.sent
      }
    ])
  })

if (import.meta.url === `file://${process.argv[1]}`) {
  NodeRuntime.runMain(Verdict.run(main, process.argv.slice(2)))
}
