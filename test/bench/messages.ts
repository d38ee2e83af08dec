/**
 * GET /messages on an account with 1,000,000 messages: throughput and p50/p99 latency of the
 * gateway (its real composition root, `apps/gateway/src/main.ts`, on PostgreSQL with Redis)
 * against a plain `node:http` + `pg` server running the same keyset query, in the same run.
 * Results and how to read them: docs/performance.md.
 *
 *   npm run bench -- messages [--connections 16,64] [--warmup 2] [--duration 10]
 *     [--mixes first,deep,filtered] [--memory-mixes first] [--rates 250,500] [--rate-mixes deep]
 *     [--messages 1000000] [--embedded-connections 16] [--cpu-prof DIR]
 *     [--database wagate_bench_messages] [--drop-database] [--pool N]
 *
 * `--pool N` starts the gateways with DATABASE_POOL_SIZE=N (default: the gateway's default), to
 * compare pool sizes; the baseline keeps its pool of 10.
 *
 * The seeded database is kept for the next run (see support/BenchDatabase.ts); `--drop-database`
 * drops it at the end.
 *
 * An empty list skips that part, e.g. `--memory-mixes= --embedded-connections=`.
 *
 * Targets (checked on the gateway with Redis, exit non-zero when one is missed; `--no-fail`
 * through run.ts): at least 0.5 x the baseline's throughput in every closed loop, p99 under
 * 25 ms at every open-loop rate.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { deepStrictEqual } from "node:assert"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as BenchDatabase from "./support/BenchDatabase.js"
import * as Embedded from "./support/Embedded.js"
import { issueKeys, KEYS, provisionAccount, type Server, startGateway } from "./support/Gateway.js"
import * as Load from "./support/Load.js"
import * as MessageSeed from "./support/MessageSeed.js"
import * as Mixes from "./support/Mixes.js"
import { machine, pidsNamed, REPO, rssMiB, scopedTs, waitReady } from "./support/Processes.js"
import { freePort } from "../support/Ports.js"
import * as Report from "./support/Report.js"
import * as Verdict from "./support/Verdict.js"

const list = (raw: string) => raw.split(",").map((s) => s.trim()).filter((s) => s !== "")

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      connections: { type: "string", default: "16,64" },
      warmup: { type: "string", default: "2" },
      duration: { type: "string", default: "10" },
      mixes: { type: "string", default: Mixes.MIXES.join(",") },
      "memory-mixes": { type: "string", default: "first" },
      rates: { type: "string", default: "250,500" },
      "rate-mixes": { type: "string", default: "deep" },
      messages: { type: "string", default: "1000000" },
      chats: { type: "string", default: "2000" },
      "embedded-connections": { type: "string", default: "16" },
      "cpu-prof": { type: "string" },
      database: { type: "string", default: "wagate_bench_messages" },
      "drop-database": { type: "boolean", default: false },
      pool: { type: "string" }
    }
  })
  const pool = values.pool === undefined ? undefined : Number(values.pool)
  if (pool !== undefined && !(Number.isInteger(pool) && pool >= 2)) {
    throw new Error(`--pool must be a whole number of at least 2, not ${values.pool}`)
  }
  const poolEnv: Record<string, string> = pool === undefined ? {} : { DATABASE_POOL_SIZE: String(pool) }
  return {
    connections: list(values.connections).map(Number),
    warmupMs: Number(values.warmup) * 1000,
    durationMs: Number(values.duration) * 1000,
    mixes: list(values.mixes) as Array<Mixes.MixName>,
    memoryMixes: list(values["memory-mixes"]) as Array<Mixes.MixName>,
    rates: list(values.rates).map(Number),
    rateMixes: list(values["rate-mixes"]) as Array<Mixes.MixName>,
    messages: Number(values.messages),
    chats: Number(values.chats),
    embeddedConnections: list(values["embedded-connections"]).map(Number),
    cpuProfDir: values["cpu-prof"],
    database: values.database,
    dropDatabase: values["drop-database"],
    pool,
    /** The gateways' DATABASE_POOL_SIZE, when given. */
    poolEnv
  }
}

const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1)

/** Process ids of the programs called `name` (Redis, here). */
/** The baseline server in its own process. */
const startBaseline = (databaseUrl: string) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const child = yield* scopedTs("baseline", join(REPO, "test/bench/support/BaselineServer.ts"), {
      env: { DATABASE_URL: databaseUrl, PORT: String(port) }
    })
    const url = `http://127.0.0.1:${port}`
    yield* waitReady(child, `${url}/api/status`)
    return { name: "baseline", child, url } satisfies Server
  })

/** Both servers give the same status and JSON for each path: they do the same work. */
const sameAnswers = (a: Server, b: Server, paths: ReadonlyArray<string>, key: string) =>
  Effect.promise(async () => {
    for (const path of paths) {
      const [x, y] = await Promise.all([a, b].map(async (server) => {
        const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
        return { status: response.status, body: await response.json() }
      }))
      deepStrictEqual(x, y, `${a.name} and ${b.name} differ on ${path}`)
    }
  })

/**
 * The targets of docs/performance.md for the production configuration (the gateway on Redis):
 * at least 0.5 x the baseline's throughput on every closed loop, and p99 under 25 ms at every
 * open-loop rate (in a saturated closed loop p99 measures the queue, the baseline's too).
 */
const checks = (rows: ReadonlyArray<Report.Row>): Array<Verdict.Check> => {
  const baselineOf = (row: Report.Row) => rows.find((r) => r.server === "baseline" && r.mix === row.mix && r.load === row.load)
  return rows.filter((r) => r.server === "gateway (redis)").map((row) => {
    const base = baselineOf(row)?.result
    const closed = row.load.endsWith("conns")
    return closed
      ? {
        what: `${row.mix}, ${row.load}: throughput`,
        target: ">= 0.5 x baseline",
        measured: `${row.result.perSecond} req/s (${Verdict.fixed(row.ratio ?? Number.NaN, 2)} x)`,
        baseline: base === undefined ? "" : `${base.perSecond} req/s`,
        met: (row.ratio ?? 0) >= 0.5
      }
      : {
        what: `${row.mix}, ${row.load}: latency p99`,
        target: "< 25 ms",
        measured: `${Verdict.fixed(row.result.p99)} ms`,
        baseline: base === undefined ? "" : `${Verdict.fixed(base.p99)} ms`,
        met: row.result.p99 < 25
      }
  })
}

export const main = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const opts = options(argv)
    const begun = performance.now()
    yield* Console.log(`machine: ${machine()}; gateway DATABASE_POOL_SIZE ${opts.pool ?? "default"}`)

    // The benchmark's own database, seeded once and reused by later runs (BenchDatabase).
    const shape = { messages: opts.messages, chats: opts.chats, days: 364 }
    const bench = yield* BenchDatabase.open(opts.database, shape)
    if (opts.dropDatabase) yield* Effect.addFinalizer(() => BenchDatabase.drop(opts.database))
    const sql = yield* Effect.provide(SqlClient.SqlClient, bench.context)
    const inDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      effect.pipe(Effect.provide(bench.context), Effect.orDie)

    const gateway = yield* startGateway("gateway (redis)", {
      ...opts.poolEnv,
      DATABASE_URL: bench.url,
      REDIS_URL: process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
      REDIS_PREFIX: `wagate-bench-${randomBytes(4).toString("hex")}`
    }, opts.cpuProfDir)
    const account = yield* Option.match(bench.kept, {
      onSome: (kept) =>
        Effect.map(issueKeys(gateway.url, kept.accountId, KEYS), (keys) => ({ ...kept, keys })),
      onNone: () =>
        Effect.gen(function*() {
          const account = yield* provisionAccount(gateway.url)
          const seeding = performance.now()
          const indexes = yield* inDatabase(sql.unsafe<{ name: string; definition: string }>(MessageSeed.INDEX_QUERY))
          const plan = { accountId: account.accountId, numberIds: account.numbers.map((n) => n.id), ...shape }
          yield* inDatabase(
            Effect.forEach(MessageSeed.statements(plan, indexes), (statement) => sql.unsafe(statement), {
              discard: true
            }).pipe(sql.withTransaction)
          )
          yield* inDatabase(BenchDatabase.recordSeed(account.accountId, shape))
          yield* Console.log(`seeded ${opts.messages} messages and their chats in ${seconds(seeding)} s`)
          return account
        })
    })
    if (Option.isSome(bench.kept)) yield* Console.log(`reusing the ${opts.messages} messages seeded in ${opts.database}`)
    const databaseUrl = bench.url
    const name = opts.database

    const facts = yield* inDatabase(MessageSeed.facts(account.accountId, account.numbers))
    const baseline = yield* startBaseline(databaseUrl)
    const memory = opts.memoryMixes.length > 0
      ? yield* startGateway("gateway (memory)", { ...opts.poolEnv, DATABASE_URL: databaseUrl }, opts.cpuProfDir)
      : undefined
    const paths = Object.fromEntries(Mixes.MIXES.map((mix) => [mix, Mixes.paths(mix, facts)]))
    for (const mix of Mixes.MIXES) yield* sameAnswers(baseline, gateway, paths[mix].slice(0, 12), account.keys[1])
    yield* Console.log(
      `same answers from both servers; idle RSS MiB: baseline ${rssMiB(baseline.child.pid).toFixed(0)}, ` +
        `gateway ${rssMiB(gateway.child.pid).toFixed(0)}\n`
    )

    const groups = () =>
      Effect.runPromise(inDatabase(sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = ${name}`).pipe(
        Effect.map((rows) => ({ postgres: rows.map((r) => r.pid), redis: pidsNamed("redis-server") }))
      ))
    const rows: Array<Report.Row> = []
    const header = Report.table([]).split("\n")
    yield* Console.log(header.join("\n"))
    const measure = (mix: Mixes.MixName, load: { connections: number; rate?: number }, servers: ReadonlyArray<Server>) =>
      Effect.gen(function*() {
        let base: number | null = null
        for (const server of servers) {
          const result = yield* Load.run({
            origin: server.url,
            paths: paths[mix],
            keys: account.keys,
            connections: load.connections,
            rate: load.rate,
            warmupMs: opts.warmupMs,
            durationMs: opts.durationMs
          }, server.child.pid, groups)
          if (server.child.process.exitCode !== null || server.child.process.signalCode !== null) {
            return yield* Effect.dieMessage(`${server.name} is gone; its last output:\n${server.child.output()}`)
          }
          if (server === baseline) base = result.perSecond
          const row: Report.Row = {
            mix,
            load: load.rate === undefined ? `${load.connections} conns` : `${load.rate}/s`,
            server: server.name,
            result,
            ratio: server === baseline || base === null || load.rate !== undefined ? null : result.perSecond / base
          }
          rows.push(row)
          yield* Console.log(Report.table([row]).split("\n")[2])
        }
      })

    for (const mix of opts.mixes) {
      for (const connections of opts.connections) {
        const alsoMemory = memory !== undefined && opts.memoryMixes.includes(mix)
        yield* measure(mix, { connections }, [baseline, gateway, ...(alsoMemory ? [memory] : [])])
      }
    }
    for (const mix of opts.rateMixes) {
      for (const rate of opts.rates) yield* measure(mix, { connections: 16, rate }, [baseline, gateway])
    }

    if (opts.embeddedConnections.length > 0) {
      const embedded = yield* Embedded.run({
        messages: opts.messages,
        chats: opts.chats,
        connections: opts.embeddedConnections,
        warmupMs: opts.warmupMs,
        durationMs: opts.durationMs,
        baseline: rows.filter((r) => r.mix === "first" && r.server === "baseline")
      })
      for (const row of embedded) yield* Console.log(Report.table([row]).split("\n")[2])
      rows.push(...embedded)
    }

    yield* Console.log(`\n${Report.table(rows)}\n\ntotal ${seconds(begun)} s; machine now: ${machine()}`)
    yield* Verdict.verdict("messages", checks(rows))
  }).pipe(Effect.scoped)
