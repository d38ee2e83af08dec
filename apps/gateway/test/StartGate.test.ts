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
import * as StartGate from "../src/cluster/StartGate.js"

const SHARDS = [1, 2, 3].map((i) => ShardId.make("default", i))
const address = (port: number) => RunnerAddress.make("127.0.0.1", port)
const SELF = address(40001)
const runner = (port: number) => Runner.make({ address: address(port), groups: ["default"], weight: 1 })

/** The gate on a storage whose runners are `runners` (healthy or not) and that hands out what it is asked. */
const gated = (runners: Array<readonly [Runner.Runner, boolean]>, clusterRunning = false) =>
  Effect.flatMap(RunnerStorage.makeMemory, (memory) =>
    StartGate.gate(
      { ...memory, getRunners: Effect.sync(() => runners) },
      { minRunners: 3, waitMs: 30_000, clusterRunning: Effect.sync(() => clusterRunning) }
    ))

describe("the cold start's gate", () => {
  it.effect("takes no shard until CLUSTER_MIN_RUNNERS healthy runners registered, then stays open", () =>
    Effect.gen(function*() {
      const runners: Array<readonly [Runner.Runner, boolean]> = [[runner(40001), true], [runner(40002), true]]
      const storage = yield* gated(runners)
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
      // An unhealthy runner does not count.
      runners.push([runner(40003), false])
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
      runners.push([runner(40004), true])
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
      // Open for good: a runner going away later does not shut it.
      runners.splice(0, 4)
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
    }))

  it.effect("opens after CLUSTER_START_WAIT_MS with fewer runners", () =>
    Effect.gen(function*() {
      const storage = yield* gated([[runner(40001), true]])
      yield* TestClock.adjust("29999 millis")
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
    }))

  it.effect("opens at once when the cluster is running already (another runner holds shards)", () =>
    Effect.gen(function*() {
      const storage = yield* gated([[runner(40001), true]], true)
      assert.deepStrictEqual(yield* storage.acquire(SELF, SHARDS), SHARDS)
    }))

  it.effect("with CLUSTER_MIN_RUNNERS 1 there is no gate; a failed look at the runners keeps it shut", () =>
    Effect.gen(function*() {
      const memory = yield* RunnerStorage.makeMemory
      const open = yield* StartGate.gate(memory, { minRunners: 1, waitMs: 30_000, clusterRunning: Effect.succeed(false) })
      assert.deepStrictEqual(yield* open.acquire(SELF, SHARDS), SHARDS)
      let failing = true
      const shut = yield* StartGate.gate(
        { ...memory, getRunners: Effect.suspend(() => failing ? Effect.die("database away") : memory.getRunners) },
        { minRunners: 1 + 1, waitMs: 30_000, clusterRunning: Effect.succeed(false) }
      )
      yield* memory.register(runner(40001), true)
      yield* memory.register(runner(40002), true)
      assert.deepStrictEqual(yield* shut.acquire(SELF, SHARDS), [])
      failing = false
      assert.deepStrictEqual(yield* shut.acquire(SELF, SHARDS), SHARDS)
    }))
})

// The PostgreSQL runner storage behind the gate: the shard locks of another runner (single-key
// advisory locks of the database) tell a running cluster; other advisory locks do not.
layer(
  StartGate.layer({ minRunners: 2, waitMs: 600_000 }).pipe(
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
})
