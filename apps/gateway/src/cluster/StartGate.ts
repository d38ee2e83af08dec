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
 *
 * The gate opens only for a request the runners registered now would give this runner. A
 * runner asks for the shards of its own view of the ring, which it refreshes every second (later
 * on a busy host), so the runner that registers last can open the others' gates before they have
 * seen it: they would take its shards with theirs, connect some of their numbers, and give them
 * up, when the numbers connect again on it. On a loaded machine a runner so took 150 shards of
 * 300, let the third runner's 50 go over 15 s while it woke 85 numbers, and, starved of CPU,
 * lost its shard locks: 46 and 55 numbers of 150 connected twice in two runs of
 * `test/cluster/cold-start.test.ts`. The gate stays shut for such a request; the runner asks
 * again once its view has caught up. Should its view not catch up (not seen: the library builds
 * its ring from the same rows), it opens anyway `VIEW_GRACE_MS` after the first such request,
 * with a warning, rather than leave the runner without shards for good.
 */
import type { Runner } from "@effect/cluster/Runner"
import type { RunnerAddress } from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardId from "@effect/cluster/ShardId"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as HashRing from "effect/HashRing"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as MachineIds from "./MachineIds.js"
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
 * How long the gate, free to open, waits for a runner's view of the ring to agree with the runners
 * registered before it opens regardless. A view is refreshed every second, so it stays apart only
 * while the host is starved of CPU for many seconds at a stretch.
 */
export const VIEW_GRACE_MS = 15_000

/**
 * The shards the healthy runners of `runners` give `self`, as the cluster assigns them (a hash
 * ring of each shard group, weighted).
 */
export const assignedTo = (
  self: RunnerAddress,
  runners: ReadonlyArray<readonly [runner: Runner, healthy: boolean]>,
  shardsPerGroup: number
): ReadonlySet<string> => {
  const rings = new Map<string, HashRing.HashRing<RunnerAddress>>()
  for (const [runner, healthy] of runners) {
    if (!healthy) continue
    for (const group of runner.groups) {
      const ring = rings.get(group) ?? HashRing.make<RunnerAddress>()
      rings.set(group, ring)
      HashRing.add(ring, runner.address, { weight: runner.weight })
    }
  }
  const mine = new Set<string>()
  for (const [group, ring] of rings) {
    HashRing.getShards(ring, shardsPerGroup)?.forEach((owner, i) => {
      if (Equal.equals(owner, self)) mine.add(ShardId.make(group, i + 1).toString())
    })
  }
  return mine
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
    /** Shards in each shard group (the cluster's `shardsPerGroup`). */
    readonly shardsPerGroup: number
  }
) =>
  Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    let open = options.minRunners <= 1
    let announced = false
    /** When a request was first turned away because this runner's view of the ring lagged. */
    let laggingSince: number | null = null
    /** Whether the runners registered now give `address` every shard of `shardIds`. */
    const current = (address: RunnerAddress, shardIds: Iterable<ShardId.ShardId>) =>
      Effect.map(storage.getRunners, (runners) => {
        const mine = assignedTo(address, runners, options.shardsPerGroup)
        for (const shardId of shardIds) if (!mine.has(shardId.toString())) return false
        return true
      })
    /** Opens the gate for this request when it may open, with why. */
    const decide = (address: RunnerAddress, shardIds: Iterable<ShardId.ShardId>) =>
      Effect.gen(function*() {
        const alive = yield* options.registered
        const why = alive >= options.minRunners
          ? Effect.logInfo(`${alive} runners registered (CLUSTER_MIN_RUNNERS ${options.minRunners}): taking shards`)
          : (yield* options.clusterRunning)
          ? Effect.logInfo(`joining a running cluster with ${alive} runners registered: taking shards`)
          : (yield* Clock.currentTimeMillis) - startedAt >= options.waitMs
          ? Effect.logWarning(
            `${alive} of CLUSTER_MIN_RUNNERS ${options.minRunners} runners registered after ${options.waitMs} ms: ` +
              "taking shards without the others"
          )
          : null
        if (why !== null) {
          if (!(yield* current(address, shardIds))) {
            const now = yield* Clock.currentTimeMillis
            laggingSince ??= now
            if (now - laggingSince < VIEW_GRACE_MS) {
              // The runner's view of the ring lags behind the runners registered: it asks again.
              return yield* Effect.logDebug("cluster start gate: the shards asked for are not this runner's now; asking again")
            }
            yield* Effect.logWarning(
              `the shards this runner asks for have not matched the runners registered for ${VIEW_GRACE_MS} ms: ` +
                "taking them anyway; numbers may connect twice while the shards settle"
            )
          }
          open = true
          return yield* why
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
            decide(address, shardIds),
            Effect.suspend(() => open ? storage.acquire(address, shardIds) : Effect.succeed([]))
          )
        )
    })
    return { storage: gated, state: StartGateState.of({ waitingFor: () => open ? null : options.minRunners }) }
  })

const Held = Schema.Array(Schema.Struct({ held: Schema.Boolean }))

/**
 * The cluster's runner storage on PostgreSQL behind the gate, for the runner at `self`
 * (`host:port`), giving each registered runner a machine id of its own (MachineIds). Runners
 * count while they have a database session (RunnerLiveness), so the rows of runners that died
 * just before a cold start, still healthy and within their heartbeat, do not open it; a process
 * whose sessions do not carry its name (a test's in-process gateway) counts the healthy rows. The
 * shard locks are single-key advisory locks of this database (the exports' locks take two keys);
 * while the gate is shut this runner holds none, so any such lock is another runner's.
 */
export const layer = (options: StartGateOptions & { readonly self: string }) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { shardLockExpiration, shardsPerGroup } = yield* ShardingConfig.ShardingConfig
      const storage = MachineIds.distinct(yield* RunnerStorage.RunnerStorage, sql, shardLockExpiration)
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
      const { state, storage: gated } = yield* gate(storage, { ...options, registered, clusterRunning, shardsPerGroup })
      return Context.make(RunnerStorage.RunnerStorage, gated).pipe(Context.add(StartGateState, state))
    })
  ).pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))
