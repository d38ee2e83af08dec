/**
 * A wagate cluster of separate processes on the loopback, as a deployment runs it: the
 * standalone simulator, one api process and runner processes (or processes of the role `all`),
 * sharing a fresh PostgreSQL database and a Redis key prefix. Every process is stopped when the
 * scope closes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Child, GATEWAY_NODE_ARGS, REPO, spawnTs, stop, waitReady } from "../../bench/support/Processes.js"
import { freePort } from "../../support/Ports.js"

export const OPERATOR_TOKEN = "wag_op_cluster_test_token"
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379"
const GATEWAY = join(REPO, "test/bench/support/GatewayProcess.ts")
const SIMULATOR = join(REPO, "apps/gateway/src/simulator.ts")

/** A fresh, migrated database for the scope (dropped after), its URL and a client on it. */
export const freshDatabase = Effect.gen(function*() {
  const url = yield* Database.scratchDatabase
  const context = yield* Layer.build(Database.layerPostgres({ url: Redacted.make(url), maxConnections: 4 }))
  return { url, sql: context.unsafeMap.get(SqlClient.SqlClient.key) as SqlClient.SqlClient }
}).pipe(Effect.orDie)

export interface Cluster {
  readonly simUrl: string
  readonly apiUrl: string
  /** The standalone simulator's and the api's processes (for their memory and CPU time). */
  readonly simulator: Child
  readonly api: Child
  readonly sql: SqlClient.SqlClient
  /** The name of the cluster's database (its PostgreSQL backends say it in their process titles). */
  readonly database: string
  /** The runners now running, by slot. */
  readonly runners: Array<Child | null>
  /** The HTTP address of each runner started with the role `all`, by slot (its latest start). */
  readonly runnerUrls: Array<string | null>
  /** Starts (again) the runner of `slot`, on the slot's runner port, with `env` beside the cluster's. */
  readonly startRunner: (slot: number, env?: Record<string, string>) => Effect.Effect<Child>
  /** Runners registered and healthy in the cluster's table (heartbeat within the lock expiration, 30 s). */
  readonly healthyRunners: Effect.Effect<number>
}

const stopped = (child: Child) =>
  Effect.addFinalizer(() => Effect.suspend(() => stop(child, 20_000)))

export interface StartOptions {
  /** Runners started at once (default: every one of `runnerCount`); the other slots wait for `startRunner`. */
  readonly initialRunners?: number
  /** How each process is spawned (default `spawnTs`), e.g. to run its entry under a probe. */
  readonly spawn?: typeof spawnTs
  /** The runners' role: `runner` (default), or `all` to serve HTTP beside their entities. */
  readonly runnerRole?: "runner" | "all"
}

/** The simulator, an api process and `runnerCount` runners (or `initialRunners` of them), all ready. */
export const start = <A>(
  runnerCount: number,
  /** Runs once the api process is ready, before any runner starts (e.g. to seed the database). */
  beforeRunners: (ready: { readonly apiUrl: string; readonly simUrl: string; readonly sql: SqlClient.SqlClient }) => Effect.Effect<A>,
  /** More environment for the api and runner processes. */
  env: Record<string, string> = {},
  options: StartOptions = {}
): Effect.Effect<Cluster & { readonly prepared: A; readonly logs: string }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const spawn = options.spawn ?? spawnTs
    const initialRunners = options.initialRunners ?? runnerCount
    const started = Date.now()
    const { sql, url } = yield* freshDatabase
    const simPort = yield* freePort
    const httpPort = yield* freePort
    const runnerPorts: Array<number> = []
    for (let i = 0; i < runnerCount; i++) runnerPorts.push(yield* freePort)
    const simUrl = `http://127.0.0.1:${simPort}`
    const common = {
      DATABASE_URL: url,
      REDIS_URL,
      REDIS_PREFIX: `wagate-cluster-${randomBytes(4).toString("hex")}`,
      OPERATOR_TOKEN,
      WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
      WA_DRIVER: "simulator",
      WA_SIM_URL: simUrl,
      ...env
    }

    // Every process's output, kept for the reader of a failed run.
    const logs = mkdtempSync(join(tmpdir(), "wagate-cluster-logs-"))
    console.log(`[cluster] process logs in ${logs}`)
    const sim = spawn("simulator", SIMULATOR, {
      // Debug: every session opened and closed, with the runner's connection, for a failed run's reader.
      env: { SIM_HOST: "127.0.0.1", SIM_PORT: String(simPort), OPERATOR_TOKEN, LOG_LEVEL: "debug" },
      logFile: join(logs, "simulator.log")
    })
    yield* stopped(sim)
    const api = spawn("api", GATEWAY, {
      nodeArgs: GATEWAY_NODE_ARGS,
      env: {
        ...common,
        WAGATE_ROLE: "api",
        HTTP_HOST: "127.0.0.1",
        HTTP_PORT: String(httpPort),
        DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-cluster-api-"))
      },
      logFile: join(logs, "api.log")
    })
    yield* stopped(api)
    const apiUrl = `http://127.0.0.1:${httpPort}`
    yield* waitReady(sim, `${simUrl}/sim/v1/config`, 120_000, { authorization: `Bearer ${OPERATOR_TOKEN}` })
    yield* waitReady(api, `${apiUrl}/api/status`, 120_000)
    console.log(`[cluster] simulator and api ready in ${Date.now() - started} ms`)

    const prepared = yield* beforeRunners({ apiUrl, simUrl, sql })
    console.log(`[cluster] prepared in ${Date.now() - started} ms`)
    const runners: Array<Child | null> = runnerPorts.map(() => null)
    const runnerUrls: Array<string | null> = runnerPorts.map(() => null)
    const runnerRole = options.runnerRole ?? "runner"
    const startRunner = (slot: number, env: Record<string, string> = {}) =>
      Effect.gen(function*() {
        const port = yield* freePort
        const child = spawn(`runner-${slot}`, GATEWAY, {
          nodeArgs: GATEWAY_NODE_ARGS,
          env: {
            ...common,
            WAGATE_ROLE: runnerRole,
            LOG_LEVEL: "debug",
            HTTP_HOST: "127.0.0.1",
            HTTP_PORT: String(port),
            RUNNER_HOST: "127.0.0.1",
            RUNNER_LISTEN_HOST: "127.0.0.1",
            RUNNER_PORT: String(runnerPorts[slot]),
            DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-cluster-runner-")),
            ...env
          },
          logFile: join(logs, `runner-${slot}.log`)
        })
        runners[slot] = child
        yield* Scope.addFinalizer(scope, Effect.suspend(() => stop(child, 20_000)))
        if (runnerRole === "all") {
          runnerUrls[slot] = `http://127.0.0.1:${port}`
          yield* waitReady(child, `${runnerUrls[slot]}/api/status`, 120_000)
        }
        return child
      })
    const healthyRunners = sql<{ n: number }>`
      SELECT count(*)::int AS n FROM cluster_runners
      WHERE healthy AND last_heartbeat > now() - interval '30 seconds'`.pipe(
      Effect.map(([row]) => row.n),
      Effect.catchAll(() => Effect.succeed(0))
    )
    for (let slot = 0; slot < initialRunners; slot++) yield* startRunner(slot)
    yield* untilTrue(Effect.map(healthyRunners, (n) => n === initialRunners), 120_000, "runners registered")
    console.log(`[cluster] ${initialRunners} runners registered in ${Date.now() - started} ms`)
    const database = new URL(url).pathname.slice(1)
    return { simUrl, apiUrl, simulator: sim, api, sql, database, runners, runnerUrls, startRunner, healthyRunners, prepared, logs }
  })

/** Polls until `check` is true, dying with `what` after `timeoutMs`. */
export const untilTrue = (check: Effect.Effect<boolean>, timeoutMs: number, what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`timed out waiting for: ${what}`)
      yield* Effect.sleep("200 millis")
    }
  })

/** Kills a runner at once (no shutdown at all), as a crash or an OOM kill would. */
export const kill = (child: Child) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      child.stopping.value = true
      if (child.process.exitCode !== null || child.process.signalCode !== null) return resolve()
      child.process.once("exit", () => resolve())
      child.process.kill("SIGKILL")
    })
  )

/** Asks a runner to stop (SIGTERM) and waits for its exit; the time it took, in ms. */
export const terminate = (child: Child) =>
  Effect.gen(function*() {
    const started = Date.now()
    yield* stop(child, 30_000)
    return Date.now() - started
  })
