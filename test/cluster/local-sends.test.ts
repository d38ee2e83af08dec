/**
 * Processes of the role `all` (HTTP and entities in one process), sharing PostgreSQL, Redis and
 * the standalone simulator. Sends go steadily through one process's HTTP API to every number:
 * those whose entities run in that process reach them directly, the others through the cluster.
 * Meanwhile a third process joins (taking shards away from the one sending) and another stops
 * (its shards come to the one sending): every send must be accepted, retried only with 503
 * `capacity` while its number reconnects, reach the network exactly once, and end `read`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ClusterLoad from "./support/ClusterLoad.js"
import * as ClusterProcesses from "./support/ClusterProcesses.js"

const NUMBERS = 30
const SENDS_PER_SECOND = 10

const log = (line: string) => console.log(`[local sends] ${line}`)

describe.skipIf(process.env.WAGATE_CLUSTER_TEST === "0")("processes that serve HTTP and host entities", () => {
  it.live("sends through one of them reach every number, once, while shards move to a joining process and from a stopping one", () =>
    Effect.scoped(Effect.gen(function*() {
      const cluster = yield* ClusterProcesses.start(3, (ready) => ClusterLoad.provisionLinked(ready, 1, NUMBERS), {}, {
        initialRunners: 2,
        runnerRole: "all"
      })
      const numbers = cluster.prepared
      const phones = new Set(numbers.map((n) => n.phone))
      const allWorking = (what: string) =>
        ClusterProcesses.untilTrue(
          Effect.promise(async () => (await ClusterLoad.working(cluster.simUrl, phones)) === NUMBERS),
          120_000,
          what
        )
      yield* allWorking("numbers WORKING")
      const greetings = yield* Effect.forEach(numbers, (n, i) => Effect.promise(() => ClusterLoad.inbound(cluster.simUrl, n, `hello-${i}`)))
      yield* ClusterLoad.assertIncomingKept(cluster, greetings)

      // Every send through the first process, each number in turn.
      const url = cluster.runnerUrls[0]!
      let running = true
      const sends: Array<ClusterLoad.SendOutcome> = []
      const send = ClusterLoad.pacedSender(url)
      const load = ClusterLoad.steady(SENDS_PER_SECOND, () => running, async (i) => {
        sends.push(await send(numbers[i % NUMBERS], `local-${i}`))
      })
      yield* Effect.addFinalizer(() => Effect.promise(() => ((running = false), load.catch(() => {}))))
      yield* Effect.sleep("3 seconds")

      // A third process joins: it takes its share of the shards, some from the first.
      yield* cluster.startRunner(2)
      yield* ClusterProcesses.untilTrue(Effect.map(cluster.healthyRunners, (n) => n === 3), 120_000, "third process registered")
      yield* Effect.sleep("3 seconds")
      yield* allWorking("numbers WORKING after the third process joined")
      yield* Effect.sleep("3 seconds")

      // The second stops: its shards go to the others, some to the first.
      const stopMs = yield* ClusterProcesses.terminate(cluster.runners[1]!)
      log(`the second process stopped in ${stopMs} ms`)
      yield* allWorking("numbers WORKING after the second process stopped")
      yield* Effect.sleep("3 seconds")
      running = false
      yield* Effect.promise(() => load)

      const retried = sends.filter((o) => o.retried.length > 0)
      log(`${sends.length} sends, ${retried.length} retried: ${retried.flatMap((o) => o.retried).slice(0, 5).join("; ")}`)
      assert.isAtLeast(sends.length, 100)
      assert.deepStrictEqual(
        sends.filter((o) => o.status !== 200 || !o.retried.every((r) => r.startsWith("503 capacity"))).map((o) =>
          `${o.text} from ${o.from}: ${[...o.retried, o.status].join(", ")} ${o.code}`
        ),
        []
      )
      yield* Effect.promise(() => ClusterLoad.assertSentOnce(cluster.simUrl, "local", sends))
      // Acks on their way when numbers moved were stored all the same.
      yield* ClusterLoad.assertAllRead(cluster)
    })), { timeout: 600_000 })
})
