/**
 * A cluster's cold start without reconnect churn. Each runner takes the shards that the runners
 * registered so far leave to it; when every runner of a deployment starts at once, the first to
 * register takes all of them, connects every number, and gives most of them up a second later as
 * the others register: those numbers connect to WhatsApp twice within seconds (a quarter of 150
 * numbers in `test/cluster/cold-start.test.ts`; a third of 2,000 with three runners started 5 s
 * apart, docs/performance.md). With `CLUSTER_MIN_RUNNERS`, a runner takes no shard until that
 * many runners have registered, so each number connects once, on the runner that keeps it.
 *
 * The wait is only for a cold start. A runner that joins a cluster already running (another
 * runner holds shards: a restart, a rolling upgrade, a runner added) takes its shards at once,
 * however few runners are up; and after `CLUSTER_START_WAIT_MS` the runners registered so far
 * start without the missing ones. Once open, the gate stays open for the life of the process.
 *
 * It wraps the runner storage's `acquire`: the cluster's acquisition loop asks again every
 * second while it gets no shard, so an opened gate is seen within a second.
 */
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as RunnerLiveness from "./RunnerLiveness.js"

/**
 * Whether this runner's gate is still shut, for its report to the operator's cluster view: the
 * runners it waits for (CLUSTER_MIN_RUNNERS), or null once it takes shards.
 */
export class StartGateState extends Context.Tag("@wagate/gateway/StartGateState")<
  StartGateState,
  { readonly waitingFor: () => number | null }
>() {}

export interface StartGateOptions {
  /** Runners registered before any takes a shard at a cold start (1: no wait). */
  readonly minRunners: number
  /** How long a cold start waits for them at most, in milliseconds. */
  readonly waitMs: number
}

/**
 * `storage` whose `acquire` takes nothing until the gate opens: `minRunners` runners alive
 * (`registered`), another runner holding shards (`clusterRunning`), or `waitMs` after it was made;
 * with the gate's state.
 */
export const gate = (
  storage: RunnerStorage.RunnerStorage["Type"],
  options: StartGateOptions & {
    readonly registered: Effect.Effect<number, unknown>
    readonly clusterRunning: Effect.Effect<boolean, unknown>
  }
) =>
  Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    let open = options.minRunners <= 1
    let announced = false
    const decide = Effect.gen(function*() {
      const alive = yield* options.registered
      if (alive >= options.minRunners) {
        open = true
        return yield* Effect.logInfo(`${alive} runners registered (CLUSTER_MIN_RUNNERS ${options.minRunners}): taking shards`)
      }
      if (yield* options.clusterRunning) {
        open = true
        return yield* Effect.logInfo(`joining a running cluster with ${alive} runners registered: taking shards`)
      }
      if ((yield* Clock.currentTimeMillis) - startedAt >= options.waitMs) {
        open = true
        return yield* Effect.logWarning(
          `${alive} of CLUSTER_MIN_RUNNERS ${options.minRunners} runners registered after ${options.waitMs} ms: ` +
            "taking shards without the others"
        )
      }
      if (announced) return
      announced = true
      yield* Effect.logInfo(`waiting for ${options.minRunners} runners before taking shards (${alive} registered)`)
    }).pipe(
      // The gate stays shut this time; the acquisition loop asks again in a second.
      Effect.catchAllCause((cause) => Effect.logDebug("cluster start gate: could not look at the runners", cause))
    )
    const gated = RunnerStorage.RunnerStorage.of({
      ...storage,
      acquire: (address, shardIds) =>
        Effect.suspend(() =>
          open ? storage.acquire(address, shardIds) : Effect.zipRight(
            decide,
            Effect.suspend(() => open ? storage.acquire(address, shardIds) : Effect.succeed([]))
          )
        )
    })
    return { storage: gated, state: StartGateState.of({ waitingFor: () => open ? null : options.minRunners }) }
  })

const Held = Schema.Array(Schema.Struct({ held: Schema.Boolean }))

/**
 * The cluster's runner storage on PostgreSQL behind the gate, for the runner at `self`
 * (`host:port`). Runners count while they have a database session (RunnerLiveness), so the rows of
 * runners that died just before a cold start, still healthy and within their heartbeat, do not
 * open it; a process whose sessions do not carry its name (a test's in-process gateway) counts the
 * healthy rows. The shard locks are single-key advisory locks of this database (the exports'
 * locks take two keys); while the gate is shut this runner holds none, so any such lock is
 * another runner's.
 */
export const layer = (options: StartGateOptions & { readonly self: string }) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const sql = yield* SqlClient.SqlClient
      // Asked the first time the gate looks, so a runner without one (the default) asks nothing.
      const named = yield* Effect.cached(
        Effect.provideService(RunnerLiveness.namesItsSessions(options.self), SqlClient.SqlClient, sql)
      )
      const registered = Effect.flatMap(named, (named): Effect.Effect<number, unknown> =>
        named
          ? Effect.provideService(RunnerLiveness.liveRunners, SqlClient.SqlClient, sql)
          : Effect.map(storage.getRunners, (runners) => runners.filter(([, healthy]) => healthy).length))
      const clusterRunning = sql`
        SELECT EXISTS (
          SELECT 1 FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND objsubid = 1
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        ) AS held`.pipe(Effect.flatMap(Schema.decodeUnknown(Held)), Effect.map(([row]) => row?.held === true))
      const { state, storage: gated } = yield* gate(storage, { ...options, registered, clusterRunning })
      return Context.make(RunnerStorage.RunnerStorage, gated).pipe(Context.add(StartGateState, state))
    })
  ).pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))
