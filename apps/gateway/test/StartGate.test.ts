import * as Runner from "@effect/cluster/Runner"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardId from "@effect/cluster/ShardId"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Database from "@wagate/store/Database"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { liveRunners, sessionName } from "../src/cluster/RunnerLiveness.js"
import * as StartGate from "../src/cluster/StartGate.js"

const SHARDS = [1, 2, 3].map((i) => ShardId.make("default", i))
const address = (port: number) => RunnerAddress.make("127.0.0.1", port)
const SELF = address(40001)
const runner = (port: number) => Runner.make({ address: address(port), groups: ["default"], weight: 1 })

/**
 * The gate on the cluster's in-memory storage, with `alive()` runners alive; this runner is the
 * one registered, so the three shards are its own.
 */
const gated = (alive: () => number, clusterRunning = false) =>
  Effect.gen(function*() {
    const memory = yield* RunnerStorage.makeMemory
    yield* memory.register(runner(40001), true)
    return yield* StartGate.gate(memory, {
      minRunners: 3,
      waitMs: 30_000,
      registered: Effect.sync(alive),
      clusterRunning: Effect.sync(() => clusterRunning),
      shardsPerGroup: SHARDS.length
    })
  })

/** The shards of the default group that the ring of `runners` gives this runner. */
const shardsOf = (runners: ReadonlyArray<Runner.Runner>, shardsPerGroup: number) =>
  [...StartGate.assignedTo(SELF, runners.map((r) => [r, true] as const), shardsPerGroup)].map((s) =>
    ShardId.make("default", Number(s.slice("default:".length)))
  )

/** The gate of a cold start with its three runners registered, 300 shards: free to open. */
const threeRegistered = Effect.gen(function*() {
  const memory = yield* RunnerStorage.makeMemory
  const all = [runner(40001), runner(40002), runner(40003)]
  for (const r of all) yield* memory.register(r, true)
  const gate = yield* StartGate.gate(memory, {
    minRunners: 3,
    waitMs: 30_000,
    registered: Effect.succeed(3),
    clusterRunning: Effect.succeed(false),
    shardsPerGroup: 300
  })
  return { all, ...gate }
})

describe("the cold start's gate", () => {
  it.effect("takes no shard until CLUSTER_MIN_RUNNERS runners are alive, then stays open", () =>
    Effect.gen(function*() {
      let alive = 2
      const { state, storage } = yield* gated(() => alive)
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
      assert.strictEqual(state.waitingFor(), 3)
      alive = 3
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
      assert.strictEqual(state.waitingFor(), null)
      // Open for good: runners going away later do not shut it.
      alive = 1
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
    }))

  it.effect("opens after CLUSTER_START_WAIT_MS with fewer runners", () =>
    Effect.gen(function*() {
      const { storage } = yield* gated(() => 1)
      yield* TestClock.adjust("29999 millis")
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
    }))

  it.effect("opens at once when the cluster is running already (another runner holds shards)", () =>
    Effect.gen(function*() {
      const { storage } = yield* gated(() => 1, true)
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
    }))

  it.effect("takes its first shards only as the runners registered now assign them, not as its older view of the ring did", () =>
    Effect.gen(function*() {
      // Three runners registered, the last one after this runner last looked at the ring: its
      // view is of two runners, whose half of the shards includes some of the third runner's.
      const { all, state, storage } = yield* threeRegistered
      const stale = shardsOf(all.slice(0, 2), 300)
      const current = shardsOf(all, 300)
      assert.isTrue(stale.length > current.length)
      assert.deepStrictEqual(yield* storage.acquire(SELF, stale), [], "nothing of an older view")
      assert.strictEqual(state.waitingFor(), 3)
      // Its view caught up: it takes its own.
      assert.deepStrictEqual((yield* storage.acquire(SELF, current)).length, current.length)
      assert.strictEqual(state.waitingFor(), null)
    }))

  it.effect("a view of the ring that never agrees with the runners registered opens the gate after VIEW_GRACE_MS", () =>
    Effect.gen(function*() {
      const { all, state, storage } = yield* threeRegistered
      const stale = shardsOf(all.slice(0, 2), 300)
      assert.deepStrictEqual(yield* storage.acquire(SELF, stale), [])
      yield* TestClock.adjust(StartGate.VIEW_GRACE_MS - 1)
      assert.deepStrictEqual(yield* storage.acquire(SELF, stale), [], "still within the grace")
      assert.strictEqual(state.waitingFor(), 3)
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* storage.acquire(SELF, stale)).length, stale.length)
      assert.strictEqual(state.waitingFor(), null)
    }))

  it.effect("with CLUSTER_MIN_RUNNERS 1 there is no gate; a failed look at the runners keeps it shut", () =>
    Effect.gen(function*() {
      const memory = yield* RunnerStorage.makeMemory
      yield* memory.register(runner(40001), true)
      const never = Effect.die("not asked")
      const open = yield* StartGate.gate(memory, {
        minRunners: 1,
        waitMs: 30_000,
        registered: never,
        clusterRunning: never,
        shardsPerGroup: SHARDS.length
      })
      assert.strictEqual(open.state.waitingFor(), null)
      assert.deepStrictEqual(yield* open.storage.acquire(SELF, SHARDS), SHARDS)
      let failing = true
      const shut = yield* StartGate.gate(memory, {
        minRunners: 2,
        waitMs: 30_000,
        registered: Effect.suspend(() => failing ? Effect.die("database away") : Effect.succeed(2)),
        clusterRunning: Effect.succeed(false),
        shardsPerGroup: SHARDS.length
      })
      assert.deepStrictEqual(yield* shut.storage.acquire(SELF, SHARDS), [])
      failing = false
      assert.deepStrictEqual(yield* shut.storage.acquire(SELF, SHARDS), SHARDS)
    }))
})

// The PostgreSQL runner storage behind the gate: the shard locks of another runner (single-key
// advisory locks of the database) tell a running cluster; other advisory locks do not.
layer(
  StartGate.layer({ minRunners: 2, waitMs: 600_000, self: "127.0.0.1:40001" }).pipe(
    Layer.provideMerge(Database.layerTest),
    Layer.provide(ShardingConfig.layer({ shardsPerGroup: 3 }))
  ),
  { timeout: 60_000 }
)("the gate on PostgreSQL", (it) => {
  it.effect("another session's shard lock opens it; a two-key advisory lock does not", () =>
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const sql = yield* SqlClient.SqlClient
      yield* storage.register(runner(40001), true)
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
      yield* Effect.scoped(Effect.gen(function*() {
        const other = yield* sql.reserve
        // An export's lock (two keys) is not a runner's.
        yield* other.executeRaw("SELECT pg_advisory_lock(7, 1)", [])
        assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
        // Another runner's lock on a shard of another group (a single bigint key).
        yield* other.executeRaw("SELECT pg_advisory_lock(999999::bigint)", [])
        assert.deepStrictEqual((yield* storage.acquire(SELF, SHARDS)).map(String).sort(), SHARDS.map(String))
        yield* other.executeRaw("SELECT pg_advisory_unlock_all()", [])
      }))
    }))

  it.effect("a runner counts as alive while it has a database session under its name", () =>
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const sql = yield* SqlClient.SqlClient
      yield* storage.register(runner(40002), true)
      yield* storage.register(runner(40003), true)
      // Two rows marked healthy (as a runner that just died leaves its row), one session of theirs.
      yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* sql.reserve
        yield* session.executeRaw(`SET application_name = '${sessionName("127.0.0.1:40002")}'`, [])
        assert.strictEqual(yield* liveRunners, 1)
        yield* session.executeRaw("RESET application_name", [])
        assert.strictEqual(yield* liveRunners, 0)
      }))
    }))
})
