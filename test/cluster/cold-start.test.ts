/**
 * A cold start of a cluster of separate processes: three runners started at once on numbers
 * linked before, as after a whole deployment restarts. With `CLUSTER_MIN_RUNNERS` at the runner
 * count, no runner takes shards before that many have registered, so every number connects to
 * WhatsApp once, on the runner that keeps it (docs/operations.md, "Starting a cluster"). A runner
 * that joins a cluster already running takes its shards at once, even while fewer runners than
 * that are up; and when the expected runners do not all come, the others start without them
 * after `CLUSTER_START_WAIT_MS`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ClusterLoad from "./support/ClusterLoad.js"
import * as ClusterProcesses from "./support/ClusterProcesses.js"

const ACCOUNTS = 5
const PER_ACCOUNT = 30
const NUMBERS = ACCOUNTS * PER_ACCOUNT
const log = (line: string) => console.log(`[cold start] ${line}`)

const allWorking = (cluster: ClusterProcesses.Cluster, phones: ReadonlySet<string>, timeoutMs: number, what: string) =>
  ClusterProcesses.untilTrue(
    Effect.promise(async () => (await ClusterLoad.working(cluster.simUrl, phones)) === phones.size),
    timeoutMs,
    what
  )

/** The simulator's view of the numbers of `phones`, by phone. */
const sessionsByPhone = (cluster: ClusterProcesses.Cluster, phones: ReadonlySet<string>) =>
  Effect.promise(async () =>
    new Map((await ClusterLoad.simNumbers(cluster.simUrl)).filter((n) => phones.has(n.phone)).map((n) => [n.phone, n]))
  )

/** How many numbers connected how many times: `{ "1": 148, "2": 2 }`. */
const connections = (cluster: ClusterProcesses.Cluster, phones: ReadonlySet<string>) =>
  Effect.map(sessionsByPhone(cluster, phones), (numbers) => {
    const counts: Record<string, number> = {}
    for (const n of numbers.values()) counts[n.sessions] = (counts[n.sessions] ?? 0) + 1
    return counts
  })

/** How many runners hold shard locks (the cluster's advisory locks, one session each). */
const shardHolders = (cluster: ClusterProcesses.Cluster) =>
  cluster.sql<{ n: number }>`
    SELECT count(DISTINCT l.pid)::int AS n FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`.pipe(
    Effect.map(([row]) => row.n),
    Effect.orDie
  )

describe.skipIf(process.env.WAGATE_CLUSTER_TEST === "0")("a cluster's cold start", () => {
  it.live("with CLUSTER_MIN_RUNNERS every number connects once; a runner joining a running cluster does not wait", () =>
    Effect.scoped(Effect.gen(function*() {
      const started = Date.now()
      const cluster = yield* ClusterProcesses.start(
        3,
        (ready) => ClusterLoad.provisionLinked(ready, ACCOUNTS, PER_ACCOUNT),
        // A wait far longer than the test polls for: a runner held by it would fail the test.
        { CLUSTER_MIN_RUNNERS: "3", CLUSTER_START_WAIT_MS: "600000" }
      )
      const phones = new Set(cluster.prepared.map((n) => n.phone))
      yield* allWorking(cluster, phones, 120_000, `${NUMBERS} numbers WORKING`)
      log(`${NUMBERS} numbers WORKING ${Date.now() - started} ms after the start`)
      // Shards that moved late would show as numbers connecting again in the seconds after.
      yield* Effect.sleep("5 seconds")
      const once = yield* connections(cluster, phones)
      log(`connections a number after the cold start: ${JSON.stringify(once)}`)
      assert.deepStrictEqual(once, { 1: NUMBERS }, "each number connected once")

      // Two of the three runners go away; the one left keeps every shard. A runner that starts
      // now joins a running cluster, with fewer runners than CLUSTER_MIN_RUNNERS: it takes its
      // shards at once.
      yield* ClusterProcesses.kill(cluster.runners[2]!)
      yield* ClusterProcesses.terminate(cluster.runners[0]!)
      yield* allWorking(cluster, phones, 60_000, "numbers WORKING on the runner left")
      const before = yield* sessionsByPhone(cluster, phones)
      const rejoined = Date.now()
      yield* cluster.startRunner(0)
      yield* ClusterProcesses.untilTrue(
        Effect.gen(function*() {
          const holders = yield* shardHolders(cluster)
          const now = yield* sessionsByPhone(cluster, phones)
          const moved = [...now].filter(([phone, n]) => n.sessions > before.get(phone)!.sessions).length
          return holders === 2 && moved > 0 && [...now.values()].every((n) => n.status === "WORKING" && n.session_open)
        }),
        60_000,
        "the joining runner holding shards, and every number WORKING"
      )
      log(`the joining runner took its shards and its numbers were WORKING ${Date.now() - rejoined} ms after its start`)
    })), { timeout: 600_000 })

  it.live("when fewer runners than CLUSTER_MIN_RUNNERS come, those up start after CLUSTER_START_WAIT_MS", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* ClusterProcesses.start(
        3,
        (ready) => ClusterLoad.provisionLinked(ready, ACCOUNTS, PER_ACCOUNT),
        { CLUSTER_MIN_RUNNERS: "3", CLUSTER_START_WAIT_MS: "3000" },
        { initialRunners: 2 }
      )
      const phones = new Set(cluster.prepared.map((n) => n.phone))
      const registered = Date.now()
      yield* allWorking(cluster, phones, 120_000, `${NUMBERS} numbers WORKING on two runners of three`)
      log(`${NUMBERS} numbers WORKING on two runners ${Date.now() - registered} ms after they registered`)
      assert.strictEqual(yield* shardHolders(cluster), 2, "both runners hold shards")
    })), { timeout: 600_000 })
})
