/**
 * Scale-out (issue 17), on separate processes on the loopback as a deployment runs them: the
 * standalone simulator, one api process and runner processes sharing a fresh PostgreSQL
 * database and Redis (test/cluster/support/ClusterProcesses.ts). Three figures:
 *
 * 1. Memory per idle number entity: a runner's RSS and heap (after a full collection) with
 *    `--memory-numbers` numbers linked and WORKING, minus the same runner before any was linked;
 *    and the runners' after the restart below, holding `--numbers` between them. The baseline is
 *    the standalone simulator's own memory per session, measured the same way.
 * 2. Time to bring `--numbers` numbers up (WORKING on the simulator) after a full restart: every
 *    runner stopped, then `--restart-runners` started (with `CLUSTER_MIN_RUNNERS` at
 *    `--min-runners`, by default as many; `--stagger` ms apart, as containers that start at
 *    different times); counted from the first one's start, with the sessions a number
 *    opened on the network meanwhile (1: none connected twice). The baseline
 *    opens as many sessions on the simulator straight from one process (32 at a time, as a
 *    runner wakes numbers after a takeover).
 * 3. Accepted sends/s with 1, 2 and 3 runners (`--runners`) and one api process, `--senders`
 *    numbers each sending at its limit of one a second (the other numbers unlinked for this
 *    part), with the ratio to one runner; the baseline hands as many senders' messages straight
 *    to the simulator.
 *
 *   flock /tmp/wagate-bench.lock npm run bench -- cluster [--numbers 10000] [--memory-numbers 2000]
 *     [--senders 1000] [--seconds 15] [--warmup 3] [--restart-runners 3] [--min-runners 3] [--stagger 0]
 *     [--runners 1,2,3] [--per-account 25]
 *
 * Issue 17 names no numeric target for these: the verdict prints the figures beside their
 * baselines and fails only when something did not work (numbers that never came up, sends
 * answered 5xx or not at all). Needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379.
 */
import * as SimRemote from "@wagate/whatsapp/sim/SimRemote"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as ClusterLoad from "../cluster/support/ClusterLoad.js"
import * as ClusterProcesses from "../cluster/support/ClusterProcesses.js"
import { alive, coreMeter, linkOnly, load1, log, type NumberRow, sleep, untilWorking, working } from "./support/ClusterBench.js"
import * as ClusterBench from "./support/ClusterBench.js"
import * as ClusterReport from "./support/ClusterReport.js"
import * as MemoryProbe from "./support/MemoryProbe.js"
import { machine, pidsNamed } from "./support/Processes.js"
import * as SendLoad from "./support/SendLoad.js"

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      numbers: { type: "string", default: "10000" },
      "memory-numbers": { type: "string", default: "2000" },
      senders: { type: "string", default: "1000" },
      seconds: { type: "string", default: "15" },
      warmup: { type: "string", default: "3" },
      "restart-runners": { type: "string", default: "3" },
      "min-runners": { type: "string" },
      stagger: { type: "string", default: "0" },
      runners: { type: "string", default: "1,2,3" },
      // 25 numbers at one send a second stay under a key's 3000 requests a minute.
      "per-account": { type: "string", default: "25" }
    }
  })
  const perAccount = Number(values["per-account"])
  const accounts = Math.ceil(Number(values.numbers) / perAccount)
  const numbers = accounts * perAccount
  return {
    accounts,
    perAccount,
    numbers,
    memoryNumbers: Math.min(Number(values["memory-numbers"]), numbers),
    senders: Math.min(Number(values.senders), numbers),
    seconds: Number(values.seconds),
    warmup: Number(values.warmup),
    restartRunners: Number(values["restart-runners"]),
    /** CLUSTER_MIN_RUNNERS of the restarted runners: by default all of them, as deployments set it. */
    minRunners: Number(values["min-runners"] ?? values["restart-runners"]),
    /** Milliseconds between the restarted runners' starts. */
    stagger: Number(values.stagger),
    runners: values.runners!.split(",").map(Number).sort((a, b) => a - b)
  }
}

export type Options = ReturnType<typeof options>

/** Generous: a busy 2-core machine brings up about 30 numbers a second. */
const upWithin = (numbers: number) => 300_000 + numbers * 100

/** Busy cores of the cluster's processes (runners as they are when asked). */
const clusterCores = (cluster: ClusterProcesses.Cluster, extra: Record<string, ReadonlyArray<number>> = {}) =>
  coreMeter(() => ({
    api: [cluster.api.pid],
    runners: alive(cluster.runners).map((r) => r.pid),
    postgres: pidsNamed("postgres"),
    simulator: [cluster.simulator.pid],
    ...extra
  }))

const stopRunners = (cluster: ClusterProcesses.Cluster) =>
  Effect.forEach(alive(cluster.runners), ClusterProcesses.terminate, { concurrency: "unbounded", discard: true })

// --- 1. memory per idle number entity on one runner ---

const memoryPart = (cluster: ClusterProcesses.Cluster, o: Options, probes: string) =>
  Effect.gen(function*() {
    const runner = cluster.runners[0]!
    // Past the start's transient memory (migrations, the first shard acquisitions).
    yield* sleep(15_000)
    const none = { runner: yield* ClusterBench.memoryOf(probes, runner), sim: yield* ClusterBench.memoryOf(probes, cluster.simulator) }
    yield* log(`runner with no number: RSS ${ClusterReport.mib(none.runner.rss)} MiB, heap ${ClusterReport.mib(none.runner.heap)} MiB`)
    const provisionStart = Date.now()
    const numbers = yield* ClusterBench.provision(cluster, { accounts: o.accounts, perAccount: o.perAccount, linked: o.memoryNumbers })
    yield* log(`${o.accounts} accounts, ${numbers.length} numbers (${o.memoryNumbers} linked) in ${((Date.now() - provisionStart) / 1000).toFixed(1)} s`)
    // Nothing asks for new numbers' entities until the supervisor's next round (a minute): a
    // request for each one's link status starts it, and a linked number connects at start.
    const linked = numbers.slice(0, o.memoryNumbers)
    const wakeStart = Date.now()
    const cores = clusterCores(cluster)
    yield* ClusterBench.pool(linked, 32, (n) => ClusterBench.call(`${cluster.apiUrl}/ops/v1/numbers/${n.id}/link`))
    const up = yield* untilWorking(cluster.simUrl, new Set(linked.map((n) => n.phone)), wakeStart, upWithin(linked.length))
    const wakeCores = cores()
    if (up.all === null) return yield* Effect.dieMessage(`only ${up.last} of ${linked.length} numbers came up on one runner`)
    yield* log(`${linked.length} numbers WORKING on one runner ${ClusterReport.secs(up.all)} after the first request`)
    // Idle: the connections' first round of work is over.
    yield* sleep(10_000)
    const full = { runner: yield* ClusterBench.memoryOf(probes, runner), sim: yield* ClusterBench.memoryOf(probes, cluster.simulator) }
    const [active] = yield* ClusterBench.activeRunners(cluster)
    return { numbers, none, full, entities: active?.entities ?? null, wake: { ms: up.all, cores: wakeCores, load: load1() } }
  })

// --- 2. a full restart ---

const restartPart = (cluster: ClusterProcesses.Cluster, o: Options, numbers: ReadonlyArray<NumberRow>, probes: string) =>
  Effect.gen(function*() {
    const stopStart = Date.now()
    yield* stopRunners(cluster)
    const stopMs = Date.now() - stopStart
    const phones = new Set(numbers.map((n) => n.phone))
    yield* ClusterProcesses.untilTrue(Effect.map(working(cluster.simUrl, phones), (n) => n === 0), 60_000, "every session closed")
    yield* log(`runners stopped in ${stopMs} ms, every session closed; linking all ${numbers.length} numbers and starting ${o.restartRunners} runners`)
    yield* linkOnly(cluster, numbers)
    const sessionsBefore = yield* sessionsOf(cluster, phones)
    const started = Date.now()
    const cores = clusterCores(cluster)
    for (let slot = 0; slot < o.restartRunners; slot++) {
      if (slot > 0) yield* sleep(o.stagger)
      yield* cluster.startRunner(slot, { CLUSTER_MIN_RUNNERS: String(o.minRunners) })
    }
    let registeredMs: number | null = null
    const watch = yield* Effect.fork(Effect.gen(function*() {
      while ((yield* cluster.healthyRunners) < o.restartRunners) yield* sleep(200)
      registeredMs = Date.now() - started
    }))
    const up = yield* untilWorking(cluster.simUrl, phones, started, upWithin(numbers.length))
    const upCores = cores()
    const load = load1()
    yield* Fiber.interrupt(watch)
    if (up.all === null) {
      return { up, registeredMs: registeredMs as number | null, stopMs, cores: upCores, load, memory: null, sessions: null }
    }
    yield* log(`every number WORKING ${ClusterReport.secs(up.all)} after the runners' start (registered at ${ClusterReport.secs(registeredMs)})`)
    // Each runner's memory with its share, once idle (and its report of its entities is fresh).
    yield* sleep(10_000)
    // Sessions a number opened since the runners started (shards moved late count too).
    const sessions = ((yield* sessionsOf(cluster, phones)) - sessionsBefore) / numbers.length
    const runners = alive(cluster.runners)
    const samples = yield* Effect.forEach(runners, (r) => ClusterBench.memoryOf(probes, r))
    const reports = yield* ClusterBench.activeRunners(cluster)
    const memory = { samples, entities: reports.map((r) => r.entities ?? 0) }
    return { up, registeredMs: registeredMs as number | null, stopMs, cores: upCores, load, memory, sessions }
  })

/** Sessions the numbers of `phones` have opened on the network so far, all together. */
const sessionsOf = (cluster: ClusterProcesses.Cluster, phones: ReadonlySet<string>) =>
  Effect.promise(async () =>
    (await ClusterLoad.simNumbers(cluster.simUrl)).filter((n) => phones.has(n.phone)).reduce((a, n) => a + n.sessions, 0)
  )

// --- 3. accepted sends/s with 1, 2, 3 runners ---

/** Waits until `count` runners hold every shard between them and every sender has been WORKING for 3 s. */
const settled = (cluster: ClusterProcesses.Cluster, count: number, phones: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 180_000
    for (let stable = 0; stable < 3;) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`${count} runners did not settle with every sender WORKING`)
      const view = yield* ClusterBench.clusterView(cluster)
      const active = view.runners.filter((r) => r.healthy && r.reported_at !== null)
      const ok = active.length === count && (yield* cluster.healthyRunners) === count &&
        view.unassigned_shards === 0 && active.every((r) => r.shards > 0) &&
        (yield* working(cluster.simUrl, phones)) === phones.size
      stable = ok ? stable + 1 : 0
      yield* sleep(1000)
    }
    return yield* ClusterBench.activeRunners(cluster)
  })

const sendsPart = (cluster: ClusterProcesses.Cluster, o: Options, senders: ReadonlyArray<NumberRow>) =>
  Effect.gen(function*() {
    const phones = new Set(senders.map((n) => n.phone))
    yield* stopRunners(cluster)
    yield* linkOnly(cluster, senders)
    const results: Array<ClusterReport.SendRun> = []
    let running = 0
    for (const count of o.runners) {
      while (running < count) yield* cluster.startRunner(running++)
      const runners = yield* settled(cluster, count, phones)
      const entities = runners.map((r) => r.entities ?? "?").join(" / ")
      yield* log(`${count} runner(s) settled (entities ${entities}); sending for ${o.seconds} s after ${o.warmup} s`)
      const { measured, result } = yield* SendLoad.runSendLoad(
        { url: cluster.apiUrl, senders, tag: `r${count}`, warmupSeconds: o.warmup, seconds: o.seconds },
        (load) => {
          const cores = clusterCores(cluster, { load: [load.pid] })
          return new Promise<Record<string, number>>((resolve) => setTimeout(() => resolve(cores()), o.seconds * 1000))
        }
      )
      yield* log(`${count} runner(s): ${Math.round(result.accepted / result.seconds)} accepted/s, refused ${JSON.stringify(result.refused)}`)
      results.push({ runners: count, result, cores: measured, entities, load: load1() })
    }
    yield* stopRunners(cluster)
    return results
  })

// --- the baseline: sessions and sends straight on the simulator ---

const baseline = (simUrl: string, o: Options) =>
  Effect.gen(function*() {
    const driver = yield* WhatsAppDriver
    const phoneOf = (i: number) => `770900${String(i).padStart(8, "0")}`
    const started = Date.now()
    const sessions = yield* Effect.forEach(
      Array.from({ length: o.numbers }, (_, i) => i),
      (i) => driver.open({ id: i, phone: phoneOf(i), linked: true }, () => Effect.void),
      { concurrency: 32 }
    )
    const up = yield* untilWorking(simUrl, new Set(sessions.map((_, i) => phoneOf(i))), started, upWithin(o.numbers))
    const latencies: Array<number> = []
    let accepted = 0
    const measureFrom = Date.now() + o.warmup * 1000
    const endAt = measureFrom + o.seconds * 1000
    yield* Effect.forEach(sessions.slice(0, o.senders), (session, i) =>
      Effect.gen(function*() {
        yield* Effect.sleep((i * 1000) / o.senders)
        for (let k = 0; Date.now() < endAt; k++) {
          const t = performance.now()
          yield* session.send({ waMessageId: `B${i}-${k}`, to: `7708${phoneOf(i).slice(4)}`, content: { kind: "text", text: `base ${k}` } })
          const elapsed = performance.now() - t
          const now = Date.now()
          if (now > measureFrom && now <= endAt) {
            accepted++
            latencies.push(elapsed)
          }
          yield* Effect.sleep(Math.max(0, 1030 - elapsed))
        }
      }).pipe(Effect.ignore), { concurrency: "unbounded", discard: true })
    latencies.sort((a, b) => a - b)
    return { up, perSecond: accepted / o.seconds, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0 }
  }).pipe(
    Effect.scoped,
    Effect.provide(SimulatorDriver.layer.pipe(Layer.provide(SimRemote.layer(simUrl))))
  )

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const o = options(argv)
    const begun = Date.now()
    yield* Console.log(`cluster benchmark: ${machine()}`)
    yield* Console.log(
      `${o.numbers} numbers (${o.accounts} accounts of ${o.perAccount}), ${o.memoryNumbers} of them on one runner for its memory; ` +
        `restart with ${o.restartRunners} runners; ${o.senders} senders with ${o.runners.join(", ")} runners, ` +
        `${o.seconds} s each after ${o.warmup} s`
    )
    const probes = mkdtempSync(join(tmpdir(), "wagate-bench-memory-"))
    const cluster = yield* ClusterProcesses.start(Math.max(o.restartRunners, ...o.runners), () => Effect.void, {}, {
      initialRunners: 1,
      spawn: MemoryProbe.spawnProbed(probes)
    })

    const memory = yield* memoryPart(cluster, o, probes)
    const restart = yield* restartPart(cluster, o, memory.numbers, probes)

    // The senders' peers write first, so their sends answer people (no first-message gap).
    const senders = memory.numbers.slice(0, o.senders)
    if (restart.up.all !== null) {
      yield* ClusterBench.pool(senders, 16, (n) => Effect.promise(() => ClusterLoad.inbound(cluster.simUrl, n, `hello ${n.phone}`)))
      yield* ClusterProcesses.untilTrue(
        Effect.map(
          cluster.sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE direction = 'in'`.pipe(Effect.orDie),
          ([row]) => row.n >= senders.length
        ),
        120_000,
        "the peers' first messages stored"
      )
    }
    const sends = restart.up.all === null ? [] : yield* sendsPart(cluster, o, senders)

    yield* log(`baseline: ${o.numbers} sessions and ${o.senders} senders straight on the simulator`)
    const base = yield* baseline(cluster.simUrl, o)

    yield* Console.log(ClusterReport.tables(o, { memory, restart, sends, base }))
    yield* Console.log(`total ${((Date.now() - begun) / 1000).toFixed(0)} s; machine now: ${machine()}`)
    yield* ClusterReport.verdict(o, { memory, restart, sends, base })
  }))
