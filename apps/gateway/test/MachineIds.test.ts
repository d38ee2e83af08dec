import * as Runner from "@effect/cluster/Runner"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, layer } from "@effect/vitest"
import * as Database from "@wagate/store/Database"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as MachineIds from "../src/cluster/MachineIds.js"
import * as StartGate from "../src/cluster/StartGate.js"

const runner = (port: number) =>
  Runner.make({ address: RunnerAddress.make("127.0.0.1", port), groups: ["default"], weight: 1 })

/** The runner storage a runner of the gateway builds, on a database of its own. */
const storage = () =>
  StartGate.layer({ minRunners: 1, waitMs: 0, self: "127.0.0.1:41001" }).pipe(
    Layer.provideMerge(Database.layerTest),
    Layer.provide(ShardingConfig.layer({ shardsPerGroup: 3 }))
  )

/** The next registration draws `next` from the runners' sequence. */
const drawNext = (next: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT setval(pg_get_serial_sequence('cluster_runners', 'machine_id'), ${next - 1})`)

const distinctModulo1024 = (ids: ReadonlyArray<number>) => new Set(ids.map((id) => id % 1024)).size === ids.length

layer(storage(), { timeout: 60_000 })("machine ids after a thousand registrations", (it) => {
  it.effect("two live runners get machine ids apart modulo 1024; one registering again keeps its own", () =>
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      // Runners started and stopped over months: the sequence is far past 1024 while one stays up.
      yield* drawNext(2000)
      const first = yield* storage.register(runner(41001), true)
      yield* drawNext(2000 + 1024)
      const second = yield* storage.register(runner(41002), true)
      assert.isTrue(distinctModulo1024([first, second]), `machine ids ${first} and ${second}`)
      assert.isTrue(first < 1024 && second < 1024)
      // The cluster registers a runner again when it misses itself from the runners it reads.
      yield* drawNext(first + 1024)
      assert.strictEqual(yield* storage.register(runner(41001), true), first)
      // A stopped runner's id goes to the next one.
      yield* storage.unregister(runner(41001).address)
      assert.strictEqual(yield* storage.register(runner(41003), true), first)
    }))
})

layer(storage(), { timeout: 60_000 })("machine ids of runners registering at once", (it) => {
  it.effect("are all apart modulo 1024, and apart from a runner's of an earlier release", () =>
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const sql = yield* SqlClient.SqlClient
      // A runner of a release that took its id from the sequence, 1024 after the next draw.
      yield* storage.register(runner(41000), true)
      yield* sql`UPDATE cluster_runners SET machine_id = ${5000 + 1024} WHERE address = '127.0.0.1:41000'`
      yield* drawNext(5000)
      const ids = yield* Effect.all(
        Array.from({ length: 8 }, (_, i) => storage.register(runner(41001 + i), true)),
        { concurrency: "unbounded" }
      )
      assert.isTrue(distinctModulo1024([5000 + 1024, ...ids]), `machine ids ${ids.join(", ")}`)
      // The library's own draws stay clear of the ids handed out.
      const [drawn] = yield* sql<{ n: string }>`SELECT nextval(pg_get_serial_sequence('cluster_runners', 'machine_id')) AS n`
      assert.isTrue(Number(drawn?.n) >= 1024)
    }))
})

layer(storage(), { timeout: 60_000 })("machine ids when every id is held", (it) => {
  it.effect("the rows of runners whose heartbeat expired give theirs up; live ones never", () =>
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      const sql = yield* SqlClient.SqlClient
      yield* drawNext(2000)
      // 1024 runners registered (as rows they leave behind), each holding one id.
      const hold = (heartbeat: string) =>
        sql`
          INSERT INTO cluster_runners (machine_id, address, runner, healthy, last_heartbeat)
          SELECT i, 'gone:' || i, '{}', true, NOW() - ${heartbeat}::interval FROM generate_series(0, 1023) AS i`
      yield* hold("0 seconds")
      const refused = yield* Effect.flip(storage.register(runner(41001), true))
      assert.strictEqual(refused._tag, "PersistenceError")
      yield* sql`DELETE FROM cluster_runners`
      yield* hold("1 hour")
      assert.strictEqual(yield* storage.register(runner(41001), true), 0)
    }))
})

layer(storage(), { timeout: 60_000 })("machine ids beside api processes", (it) => {
  it.scoped("a runner takes none that an api process holds", () =>
    Effect.gen(function*() {
      const storage = yield* RunnerStorage.RunnerStorage
      // Two api processes hold 0 and 1, each on its session (as MachineIds.apiMachineId does).
      yield* Effect.forEach([0, 1], (id) =>
        Effect.flatMap(
          Effect.flatten(Database.DatabaseSession),
          (client) => Effect.promise(() => client.query("SELECT pg_advisory_lock($1, $2)", [MachineIds.API_LOCK_SPACE, id]))
        ))
      yield* drawNext(3000)
      assert.strictEqual(yield* storage.register(runner(41001), true), 2)
    }))
})
