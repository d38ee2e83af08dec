/**
 * Scale-out, proved on separate processes: one api process and three runners sharing PostgreSQL
 * and Redis, the standalone simulator as the network, 1,000 numbers, steady sends and incoming
 * messages. A runner is killed with SIGKILL mid-load: every number must be WORKING again on the
 * network within the failover target, no accepted send lost or sent twice, no incoming message
 * lost, and no number sending twice in one second across the handover. Then every runner is
 * restarted one by one (SIGTERM) under load, and no request may fail (on a machine that set the
 * pace meanwhile, see below, a send answered 503 `capacity`, its number still reconnecting, and
 * accepted on its retry is tolerated; nothing else).
 *
 * The rates fit a busy 2-core machine; the measured figures are printed for docs/performance.md.
 * `FAILOVER_TARGET_MS` (default 10000) is the target asserted when, during the failover, processes
 * other than this test's own (its cluster, PostgreSQL and Redis) used at most
 * `FAILOVER_MAX_OTHER_CORES` (0.5) of a core and the machine's cores were not all busy
 * (`FAILOVER_SATURATED_SHARE`, 0.9 of every core); 60 s when the machine set the pace.
 * `CLUSTER_NUMBERS` (1000) the numbers. Each process's output goes to a directory printed at the
 * start. It is part of `npm test` and runs after every other file has finished (vitest.config.ts),
 * alone; `WAGATE_CLUSTER_TEST=0` leaves it out (a quick local run).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { cpuSeconds, pidsNamed } from "../bench/support/Processes.js"
import * as ClusterLoad from "./support/ClusterLoad.js"
import type { NumberRef, SendOutcome } from "./support/ClusterLoad.js"
import * as ClusterProcesses from "./support/ClusterProcesses.js"

const NUMBERS = Number(process.env.CLUSTER_NUMBERS ?? 1000)
const ACCOUNTS = 10
const SENDS_PER_SECOND = 15
const INBOUND_PER_SECOND = 8
/** Numbers asked to send about every 0.6 s: the 1-per-second limit must refuse about half. */
const HOT = 4
const FAILOVER_TARGET_MS = Number(process.env.FAILOVER_TARGET_MS ?? 10_000)
/** Above this much CPU taken by other processes, the machine, not the cluster, sets the pace. */
const MAX_OTHER_CORES = Number(process.env.FAILOVER_MAX_OTHER_CORES ?? 0.5)
const OVERLOADED_BOUND_MS = 60_000
const CORES = availableParallelism()
/** Busy share of all cores at which the machine, not the failover, sets the pace. */
const SATURATED_SHARE = Number(process.env.FAILOVER_SATURATED_SHARE ?? 0.9)

/**
 * Why the machine rather than the cluster set the pace of a phase, if it did: other work took
 * more than `MAX_OTHER_CORES`, or every core was busy (on a slow machine the cluster's own
 * processes, reconnecting hundreds of numbers, saturate two cores by themselves; the runners then
 * wait for a core, not for the failover).
 */
const pacedByMachine = (others: number, machine: number): "shared" | "saturated" | undefined =>
  others > MAX_OTHER_CORES ? "shared" : machine >= SATURATED_SHARE * CORES ? "saturated" : undefined

const PACED_BY = { shared: "the machine was shared with other work", saturated: "every core was busy" } as const
/** What the runner-to-simulator hop may add to one message and not the next (loopback, busy machine). */
const TRANSPORT_JITTER_MS = 250
/**
 * The same when every core was busy: each process then waits for a core, and the event loops of
 * the runners and the simulator lagged up to 0.5 s (measured with `monitorEventLoopDelay` on a
 * 2-core machine during a failover), so one message can wait that much longer than the next.
 */
const SATURATED_JITTER_MS = 500

/** Seconds of CPU the whole machine has spent busy since boot. */
const machineBusy = () => {
  const [, ...fields] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/)
  const ticks = fields.slice(0, 8).map(Number)
  return (ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) / 100
}

/**
 * PostgreSQL's processes that work for this test: the backends of its database (a backend's
 * process title names its database) and the server's own processes (checkpointer, WAL writer...,
 * which work for every database: counted as the test's, so that what is left is surely others').
 * A benchmark's backends beside it are not the test's.
 */
const postgresOf = (database: string) =>
  pidsNamed("postgres").filter((pid) => {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")
      const backend = /^postgres: (?:\S+: )?\S+ (\S+) (?:\[local\]|\S+\(\d+\))/.exec(title)
      return backend === null || backend[1] === database
    } catch {
      return false
    }
  })

/**
 * Watches how many cores the whole machine, and processes other than this test's own (`pids()`,
 * which may change as runners stop and start; its database's PostgreSQL processes, Redis and this
 * process), use from now on. Sampled twice a second, so a process that exits meanwhile counts with
 * what it used until its last sample, and one that starts meanwhile with all it used.
 */
const watchCores = (database: string, pids: () => ReadonlyArray<number>) => {
  const started = Date.now()
  const busyAtStart = machineBusy()
  const first = new Map<number, number>()
  const last = new Map<number, number>()
  const sample = (initial: boolean) => {
    for (const pid of [process.pid, ...pids(), ...postgresOf(database), ...pidsNamed("redis-server")]) {
      const used = cpuSeconds(pid)
      if (used === 0) continue
      if (!first.has(pid)) first.set(pid, initial ? used : 0)
      last.set(pid, used)
    }
  }
  sample(true)
  const timer = setInterval(() => sample(false), 500).unref()
  return () => {
    sample(false)
    clearInterval(timer)
    let ours = 0
    for (const [pid, from] of first) ours += (last.get(pid) ?? from) - from
    const seconds = (Date.now() - started) / 1000
    const busy = machineBusy() - busyAtStart
    return { others: (busy - ours) / seconds, machine: busy / seconds }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const log = (line: string) => console.log(`[cluster] ${line}`)

interface Load {
  readonly sends: Array<SendOutcome>
  readonly hotSends: Array<SendOutcome>
  readonly incoming: Array<string>
  readonly stop: () => Promise<void>
}

/** Steady sends (each number in turn) and incoming messages, plus `hot` numbers pushed at their limit. */
const startLoad = (cluster: ClusterProcesses.Cluster, numbers: ReadonlyArray<NumberRef>, tag: string, hot: number): Load => {
  let running = true
  const sends: Array<SendOutcome> = []
  const hotSends: Array<SendOutcome> = []
  const incoming: Array<string> = []
  const cold = numbers.slice(hot)
  const send = ClusterLoad.pacedSender(cluster.apiUrl)
  const loops = [
    ClusterLoad.steady(SENDS_PER_SECOND, () => running, async (i) => {
      sends.push(await send(cold[i % cold.length], `${tag}-s${i}`))
    }),
    ClusterLoad.steady(INBOUND_PER_SECOND, () => running, async (i) => {
      const n = numbers[(i * 7) % numbers.length]
      incoming.push(await ClusterLoad.inbound(cluster.simUrl, n, `${tag}-in${i}`))
    }),
    ...numbers.slice(0, hot).map((n, h) =>
      ClusterLoad.steady(1 / 0.6, () => running, async (i) => {
        hotSends.push(await ClusterLoad.send(cluster.apiUrl, n, `${tag}-h${h}-${i}`))
      })
    )
  ]
  return {
    sends,
    hotSends,
    incoming,
    stop: async () => {
      running = false
      await Promise.all(loops)
    }
  }
}

/**
 * A load that also stops when the test fails half-way, before the processes it talks to are
 * stopped (a finalizer added after theirs runs before them); `stop` may run twice.
 */
const scopedLoad = (...args: Parameters<typeof startLoad>) =>
  Effect.acquireRelease(
    Effect.sync(() => startLoad(...args)),
    // After a failure its requests fail too (the processes are going): that is not news.
    (load) => Effect.promise(() => load.stop().catch(() => {}))
  )

const summary = (outcomes: ReadonlyArray<SendOutcome>) => {
  const byStatus = new Map<string, number>()
  for (const o of outcomes) {
    const key = o.status === 200 ? "200" : `${o.status} ${o.code}`
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1)
  }
  const retried = outcomes.filter((o) => o.retried.length > 0).length
  return `${JSON.stringify(Object.fromEntries(byStatus))}, ${retried} retried`
}

describe.skipIf(process.env.WAGATE_CLUSTER_TEST === "0")("cluster of separate processes", () => {
  it.live("survives kill -9 of a runner and a rolling restart under load", () =>
    Effect.scoped(Effect.gen(function*() {
      const started = Date.now()
      const cluster = yield* ClusterProcesses.start(3, (ready) => ClusterLoad.provisionLinked(ready, ACCOUNTS, NUMBERS / ACCOUNTS))
      const numbers = cluster.prepared
      log(`cluster up in ${Date.now() - started} ms`)
      const phones = new Set(numbers.map((n) => n.phone))
      let lastLog = 0
      yield* ClusterProcesses.untilTrue(
        Effect.promise(async () => {
          const up = await ClusterLoad.working(cluster.simUrl, phones)
          if (Date.now() - lastLog > 10_000) {
            lastLog = Date.now()
            log(`${up} of ${NUMBERS} numbers WORKING`)
          }
          return up === NUMBERS
        }),
        180_000,
        `${NUMBERS} numbers WORKING`
      )
      // Each peer writes first, so the steady sends answer people and are never first messages.
      // Twenty at a time: a thousand at once is a burst no peer sends, and it only measures how
      // long the simulator's HTTP queue gets on a busy machine.
      const greetings = yield* Effect.forEach(
        numbers,
        (n, i) => Effect.promise(() => ClusterLoad.inbound(cluster.simUrl, n, `hello-${i}`)),
        { concurrency: 20 }
      )
      yield* ClusterLoad.assertIncomingKept(cluster, greetings)
      log(`${NUMBERS} numbers linked and greeted at ${Date.now() - started} ms`)

      // --- kill -9 mid-load ---
      const load = yield* scopedLoad(cluster, numbers, "kill", HOT)
      yield* Effect.promise(() => sleep(8_000))
      const victim = cluster.runners[1]!
      const survivors = () => [cluster.simulator, cluster.api, ...cluster.runners].flatMap((c) => c && c !== victim ? [c.pid] : [])
      const cores = watchCores(cluster.database, survivors)
      const killedAt = Date.now()
      yield* ClusterProcesses.kill(victim)
      log(`kill -9 of runner 1 (pid ${victim.pid}) at ${new Date(killedAt).toISOString()}`)
      let lowest = NUMBERS
      let recoveredAt = 0
      while (Date.now() - killedAt < 60_000) {
        const up = yield* Effect.promise(() => ClusterLoad.working(cluster.simUrl, phones))
        lowest = Math.min(lowest, up)
        if (lowest < NUMBERS && up === NUMBERS) {
          recoveredAt = Date.now()
          break
        }
        yield* Effect.sleep("200 millis")
      }
      const failoverMs = recoveredAt === 0 ? Infinity : recoveredAt - killedAt
      const { others, machine } = cores()
      log(`kill -9: ${NUMBERS - lowest} numbers went down, all WORKING again after ${failoverMs} ms`)
      yield* Effect.promise(() => sleep(5_000))
      yield* Effect.promise(load.stop)
      log(`sends during the kill: ${summary(load.sends)}; hot: ${summary(load.hotSends)}`)

      assert.isTrue(lowest < NUMBERS, "the killed runner's numbers went down")
      // The target is a property of a machine with CPU to spare: on an oversubscribed one the
      // runners themselves are starved (see docs/operations.md), so there only the bound holds.
      const paced = pacedByMachine(others, machine)
      const bound = paced === undefined ? FAILOVER_TARGET_MS : OVERLOADED_BOUND_MS
      log(`other processes used ${others.toFixed(2)} cores, the whole machine ${machine.toFixed(2)} of ${CORES}, during the failover: ` +
        (paced === undefined ? `asserting the target, ${bound} ms` : `${PACED_BY[paced]}: asserting ${bound} ms (target ${FAILOVER_TARGET_MS} ms ${failoverMs <= FAILOVER_TARGET_MS ? "met" : "missed"})`))
      assert.isAtMost(failoverMs, bound, `every number WORKING again within ${bound} ms`)
      const network = yield* Effect.promise(() =>
        ClusterLoad.assertSentOnce(cluster.simUrl, "kill", [...load.sends, ...load.hotSends])
      )
      yield* ClusterLoad.assertIncomingKept(cluster, load.incoming)
      // The hot numbers were asked for more than one message a second throughout the handover.
      let closest = Infinity
      for (const n of numbers.slice(0, HOT)) {
        const times = network.filter((m) => m.from === n.phone).map((m) => Date.parse(m.sent_at)).sort((a, b) => a - b)
        for (let i = 1; i < times.length; i++) closest = Math.min(closest, times[i] - times[i - 1])
      }
      log(`closest two sends of one number on the network: ${closest} ms`)
      // The gateway hands a number's messages over at least 1 s apart; the simulator stamps them
      // as they arrive over its WebSocket, so the delay of that hop may vary between two of them.
      const jitter = paced === "saturated" ? SATURATED_JITTER_MS : TRANSPORT_JITTER_MS
      assert.isAtLeast(closest, 1000 - jitter, "no number sent two messages within one second")
      assert.isTrue(load.hotSends.some((o) => o.code === "rate_limited"), "the hot numbers were held at their limit")

      // The killed runner comes back and takes its shards back.
      yield* cluster.startRunner(1)
      yield* ClusterProcesses.untilTrue(Effect.map(cluster.healthyRunners, (n) => n === 3), 120_000, "runner back")
      yield* ClusterProcesses.untilTrue(
        Effect.promise(async () => (await ClusterLoad.working(cluster.simUrl, phones)) === NUMBERS),
        60_000,
        "numbers WORKING after the runner's return"
      )

      // --- rolling restart under load ---
      const rolling = yield* scopedLoad(cluster, numbers, "roll", 0)
      const rollingCores = watchCores(cluster.database, () =>
        [cluster.simulator, cluster.api, ...cluster.runners].flatMap((c) => c ? [c.pid] : [])
      )
      yield* Effect.promise(() => sleep(3_000))
      // As a rolling upgrade does (docs/operations.md): the next runner stops only once the one
      // before is back and every number is WORKING again, so no number moves twice at once.
      for (let slot = 0; slot < 3; slot++) {
        const stopMs = yield* ClusterProcesses.terminate(cluster.runners[slot]!)
        const restartedAt = Date.now()
        yield* cluster.startRunner(slot)
        yield* ClusterProcesses.untilTrue(Effect.map(cluster.healthyRunners, (n) => n === 3), 120_000, "runner back")
        const registeredMs = Date.now() - restartedAt
        yield* ClusterProcesses.untilTrue(
          Effect.promise(async () => (await ClusterLoad.working(cluster.simUrl, phones)) === NUMBERS),
          180_000,
          "numbers WORKING after the restart"
        )
        log(`runner ${slot}: stopped in ${stopMs} ms, registered in ${registeredMs} ms, every number WORKING after ${Date.now() - restartedAt} ms`)
        yield* Effect.promise(() => sleep(3_000))
      }
      yield* Effect.promise(rolling.stop)
      log(`sends during the rolling restart: ${summary(rolling.sends)}`)
      const rollingUse = rollingCores()
      const rollingPaced = pacedByMachine(rollingUse.others, rollingUse.machine)
      // A request answered 503 and then accepted on its retry still failed once. On a machine
      // that set the pace (shared with a benchmark, or every core busy), a number can take longer
      // to reconnect than a send waits for it (10 s): the send is answered 503 `capacity` with
      // Retry-After, and accepted when the client tries again with its Idempotency-Key; only there
      // is that tolerated. Nothing else may fail, and what was accepted reaches the network once (below).
      const waitedOut = (o: SendOutcome) =>
        rollingPaced !== undefined && o.status === 200 && o.retried.length > 0 && o.retried.every((r) => r.startsWith("503 capacity"))
      const failed = rolling.sends.filter((o) => o.status !== 200 || o.retried.length > 0)
      log(`other processes used ${rollingUse.others.toFixed(2)} cores, the whole machine ${rollingUse.machine.toFixed(2)} of ${CORES}, during the rolling restart` +
        (rollingPaced !== undefined ? ` (${PACED_BY[rollingPaced]}): ${failed.filter(waitedOut).length} sends accepted after 503 capacity tolerated` : ""))
      assert.deepStrictEqual(
        failed.filter((o) => !waitedOut(o)).map((o) =>
          `${o.text} from ${o.from} at ${o.startedAt.toISOString()} (${o.tookMs} ms): ${[...o.retried, o.status].join(", ")} ${o.code}`
        ),
        []
      )
      yield* Effect.promise(() => ClusterLoad.assertSentOnce(cluster.simUrl, "roll", rolling.sends))
      yield* ClusterLoad.assertIncomingKept(cluster, rolling.incoming)
      log(`done in ${Date.now() - started} ms`)
    })), { timeout: 900_000 })
})
