/**
 * Scale-out (issue 17), on separate processes on the loopback as a deployment runs them: the
 * standalone simulator, one api process and runner processes sharing a fresh PostgreSQL
 * database and Redis (test/cluster/support/ClusterProcesses.ts). Three figures:
 *
 * 1. Memory per idle number entity: a runner's RSS and heap (after a full collection) with
 *    `--numbers` numbers linked and WORKING, minus the same runner before any was linked; the
 *    baseline is the standalone simulator's own memory per session, measured the same way.
 * 2. Time to bring every number up (WORKING on the simulator) after a full restart: all runners
 *    stopped, then `--restart-runners` started; counted from their start. The baseline opens as
 *    many sessions on the simulator straight from one process (32 at a time, as a runner wakes
 *    numbers after a takeover).
 * 3. Accepted sends/s with 1, 2 and 3 runners (`--runners`) and one api process, `--senders`
 *    numbers each sending at its limit of one a second (the other numbers unlinked for this
 *    part), with the ratio to one runner; the baseline hands as many senders' messages straight
 *    to the simulator.
 *
 *   flock /tmp/wagate-bench.lock npm run bench -- cluster [--numbers 10000] [--senders 1000]
 *     [--seconds 20] [--restart-runners 3] [--runners 1,2,3] [--per-account 25]
 *
 * Issue 17 names no numeric target for these: the verdict prints the figures beside their
 * baselines and fails only when something did not work (numbers that never came up, sends
 * answered 500 or not at all). Needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379.
 */
import * as SimRemote from "@wagate/whatsapp/sim/SimRemote"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as ClusterLoad from "../cluster/support/ClusterLoad.js"
import * as ClusterProcesses from "../cluster/support/ClusterProcesses.js"
import { OPERATOR_TOKEN } from "../cluster/support/ClusterProcesses.js"
import * as MemoryProbe from "./support/MemoryProbe.js"
import { type Child, cpuSeconds, machine, pidsNamed } from "./support/Processes.js"
import * as SendLoad from "./support/SendLoad.js"
import * as Verdict from "./support/Verdict.js"

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      numbers: { type: "string", default: "10000" },
      senders: { type: "string", default: "1000" },
      seconds: { type: "string", default: "20" },
      warmup: { type: "string", default: "3" },
      "restart-runners": { type: "string", default: "3" },
      runners: { type: "string", default: "1,2,3" },
      // 25 numbers at one send a second stay under a key's 3000 requests a minute.
      "per-account": { type: "string", default: "25" }
    }
  })
  const perAccount = Number(values["per-account"])
  const accounts = Math.ceil(Number(values.numbers) / perAccount)
  return {
    accounts,
    perAccount,
    numbers: accounts * perAccount,
    senders: Math.min(Number(values.senders), accounts * perAccount),
    seconds: Number(values.seconds),
    warmup: Number(values.warmup),
    restartRunners: Number(values["restart-runners"]),
    runners: values.runners!.split(",").map(Number).sort((a, b) => a - b)
  }
}

type Options = ReturnType<typeof options>

const MiB = 1024 * 1024
const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))
const load1 = () => loadavg()[0].toFixed(1)
const log = (line: string) => Console.error(`[cluster bench] ${line}`)
const ops = { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" }

const call = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { ...init, headers: ops, signal: AbortSignal.timeout(60_000) })
    const text = await response.text()
    if (!response.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${response.status} ${text}`)
    return text === "" ? null : JSON.parse(text)
  })

/** Runs `f` over `items`, `concurrency` at a time. */
const pool = <T>(items: ReadonlyArray<T>, concurrency: number, f: (item: T) => Effect.Effect<unknown>) =>
  Effect.forEach(items, f, { concurrency, discard: true })

interface NumberRow extends SendLoad.Sender {
  readonly phone: string
}

/**
 * Accounts (through the operator API: account, credit, key) and their numbers, written to the
 * database as numbers linked before, as test/cluster does: a runner connects them when it wakes
 * them. Numbers of one account share its key.
 */
const provision = (cluster: ClusterProcesses.Cluster, o: Options) =>
  Effect.gen(function*() {
    const keys = new Map<number, string>()
    yield* pool(Array.from({ length: o.accounts }, (_, a) => a), 8, (a) =>
      Effect.gen(function*() {
        const account = yield* call(`${cluster.apiUrl}/ops/v1/accounts`, {
          method: "POST",
          body: JSON.stringify({ email: `bench-${a}@example.kz`, company: "Bench LLP" })
        })
        yield* call(`${cluster.apiUrl}/ops/v1/accounts/${account.id}/credit`, {
          method: "POST",
          body: JSON.stringify({ amount: 10_000_000 })
        })
        const { key } = yield* call(`${cluster.apiUrl}/ops/v1/keys`, {
          method: "POST",
          body: JSON.stringify({ account_id: account.id })
        })
        keys.set(account.id, key)
        yield* cluster.sql`UPDATE accounts SET numbers_limit = ${o.perAccount} WHERE id = ${account.id}`
        const phones = Array.from({ length: o.perAccount }, (_, i) => `770100${String(a * o.perAccount + i).padStart(8, "0")}`)
        yield* cluster.sql`
          INSERT INTO numbers (account_id, phone, status, linked, connected_at)
          SELECT ${account.id}, phone, 'STARTING', true, now() - interval '10 days'
          FROM unnest(${`{${phones.join(",")}}`}::text[]) AS phone`
      }).pipe(Effect.orDie))
    const rows = yield* cluster.sql<{ id: string; account_id: string; phone: string }>`
      SELECT id, account_id, phone FROM numbers ORDER BY phone`.pipe(Effect.orDie)
    return rows.map((r): NumberRow => ({
      id: Number(r.id),
      phone: r.phone,
      key: keys.get(Number(r.account_id))!,
      peer: `7702${r.phone.slice(4)}`
    }))
  })

/** How many of `phones` the simulator sees WORKING with a session open. */
const working = (simUrl: string, phones: ReadonlySet<string>) =>
  Effect.promise(() => ClusterLoad.working(simUrl, phones))

interface Milestones {
  /** Milliseconds from the start to the first number, half, 90% and all of them WORKING. */
  readonly first: number | null
  readonly half: number | null
  readonly most: number | null
  readonly all: number | null
  readonly last: number
}

/** Polls the simulator every second until every one of `phones` is WORKING, or `timeoutMs`. */
const untilWorking = (simUrl: string, phones: ReadonlySet<string>, since: number, timeoutMs: number) =>
  Effect.gen(function*() {
    const at = { first: null as number | null, half: null as number | null, most: null as number | null }
    let lastLog = Date.now()
    for (;;) {
      const n = yield* working(simUrl, phones)
      const elapsed = Date.now() - since
      if (n > 0) at.first ??= elapsed
      if (n >= phones.size / 2) at.half ??= elapsed
      if (n >= phones.size * 0.9) at.most ??= elapsed
      if (n === phones.size) return { ...at, all: elapsed, last: n } satisfies Milestones
      if (elapsed > timeoutMs) return { ...at, all: null, last: n } satisfies Milestones
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now()
        yield* log(`${n} of ${phones.size} WORKING after ${(elapsed / 1000).toFixed(0)} s (load ${load1()})`)
      }
      yield* sleep(1000)
    }
  })

interface ClusterRunner {
  readonly address: string
  readonly healthy: boolean
  readonly shards: number
  readonly entities: number | null
  readonly reported_at: string | null
}

const clusterView = (cluster: ClusterProcesses.Cluster) =>
  Effect.map(call(`${cluster.apiUrl}/ops/v1/cluster`), (view) => view as { runners: Array<ClusterRunner>; unassigned_shards: number })

/** Memory of a probed process: the median of three readings a second apart. */
const memoryOf = (dir: string, child: Child) =>
  Effect.gen(function*() {
    const readings: Array<MemoryProbe.Memory> = []
    for (let i = 0; i < 3; i++) {
      if (i > 0) yield* sleep(1000)
      readings.push(yield* MemoryProbe.readMemory(dir, child))
    }
    const median = (f: (m: MemoryProbe.Memory) => number) => readings.map(f).sort((a, b) => a - b)[1]
    return { rss: median((m) => m.rss), heap: median((m) => m.heapUsed) }
  })

type Sample = Effect.Effect.Success<ReturnType<typeof memoryOf>>

/** Busy cores of each group of processes between two readings. */
const coreMeter = (groups: () => Record<string, ReadonlyArray<number>>) => {
  const read = () =>
    Object.fromEntries(Object.entries(groups()).map(([name, pids]) => [name, pids.reduce((s, pid) => s + cpuSeconds(pid), 0)]))
  const start = read()
  const began = Date.now()
  return () => {
    const end = read()
    const seconds = (Date.now() - began) / 1000
    return Object.fromEntries(Object.keys(end).map((name) => [name, (end[name] - (start[name] ?? 0)) / seconds]))
  }
}

// --- 1. memory per idle number entity ---

const memoryPart = (cluster: ClusterProcesses.Cluster, o: Options, probes: string) =>
  Effect.gen(function*() {
    const runner = cluster.runners[0]!
    // Past the start's transient memory (migrations, the first shard acquisitions).
    yield* sleep(15_000)
    const none = { runner: yield* memoryOf(probes, runner), sim: yield* memoryOf(probes, cluster.simulator) }
    yield* log(`runner with no number: RSS ${(none.runner.rss / MiB).toFixed(0)} MiB, heap ${(none.runner.heap / MiB).toFixed(0)} MiB`)
    const provisionStart = Date.now()
    const numbers = yield* provision(cluster, o)
    yield* log(`${o.accounts} accounts, ${numbers.length} numbers provisioned in ${((Date.now() - provisionStart) / 1000).toFixed(1)} s`)
    // Nothing asks for the new numbers' entities until the supervisor's next round (a minute):
    // a request for each one's link status starts it, and a linked number connects at start.
    const wakeStart = Date.now()
    yield* pool(numbers, 16, (n) => call(`${cluster.apiUrl}/ops/v1/numbers/${n.id}/link`))
    const phones = new Set(numbers.map((n) => n.phone))
    const up = yield* untilWorking(cluster.simUrl, phones, wakeStart, 300_000 + numbers.length * 100)
    if (up.all === null) return yield* Effect.dieMessage(`only ${up.last} of ${numbers.length} numbers came up on one runner`)
    yield* log(`${numbers.length} numbers WORKING on one runner ${(up.all / 1000).toFixed(1)} s after the first request`)
    // Idle: the connections' first round of work is over.
    yield* sleep(10_000)
    const full = { runner: yield* memoryOf(probes, runner), sim: yield* memoryOf(probes, cluster.simulator) }
    const view = yield* clusterView(cluster)
    const entities = view.runners.reduce((sum, r) => sum + (r.entities ?? 0), 0)
    return { numbers, none, full, entities, wakeMs: up.all, load: load1() }
  })

// --- 2. a full restart ---

const restartPart = (cluster: ClusterProcesses.Cluster, o: Options, numbers: ReadonlyArray<NumberRow>) =>
  Effect.gen(function*() {
    const phones = new Set(numbers.map((n) => n.phone))
    const stopStart = Date.now()
    yield* stopRunners(cluster)
    const stopMs = Date.now() - stopStart
    const left = yield* working(cluster.simUrl, phones)
    yield* log(`runners stopped in ${stopMs} ms; ${left} numbers still WORKING on the simulator`)
    yield* ClusterProcesses.untilTrue(Effect.map(working(cluster.simUrl, phones), (n) => n === 0), 60_000, "every session closed")
    const started = Date.now()
    for (let slot = 0; slot < o.restartRunners; slot++) yield* cluster.startRunner(slot)
    let registeredMs: number | null = null
    const watch = yield* Effect.fork(Effect.gen(function*() {
      while ((yield* cluster.healthyRunners) < o.restartRunners) yield* sleep(200)
      registeredMs = Date.now() - started
    }))
    const up = yield* untilWorking(cluster.simUrl, phones, started, 300_000 + numbers.length * 100)
    yield* Fiber.interrupt(watch)
    const view = yield* clusterView(cluster)
    return { up, registeredMs: registeredMs as number | null, stopMs, load: load1(), runners: view.runners }
  })

const stopRunners = (cluster: ClusterProcesses.Cluster) =>
  Effect.forEach(
    cluster.runners.filter((r): r is Child => r !== null && r.process.exitCode === null && r.process.signalCode === null),
    ClusterProcesses.terminate,
    { concurrency: "unbounded", discard: true }
  )

// --- 3. accepted sends/s with 1, 2, 3 runners ---

/** Waits until `count` runners are healthy, hold every shard between them, and every sender is WORKING. */
const settled = (cluster: ClusterProcesses.Cluster, count: number, phones: ReadonlySet<string>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 180_000
    let stable = 0
    while (stable < 3) {
      if (Date.now() > deadline) return yield* Effect.dieMessage(`${count} runners did not settle with every sender WORKING`)
      const view = yield* clusterView(cluster)
      // A runner that stopped removes its report; one that runs reports every 5 s.
      const active = view.runners.filter((r) => r.healthy && r.reported_at !== null)
      const ok = active.length === count && (yield* cluster.healthyRunners) === count &&
        view.unassigned_shards === 0 && active.every((r) => r.shards > 0) &&
        (yield* working(cluster.simUrl, phones)) === phones.size
      stable = ok ? stable + 1 : 0
      yield* sleep(1000)
    }
    return (yield* clusterView(cluster)).runners.filter((r) => r.healthy && r.reported_at !== null)
  })

const sendsPart = (cluster: ClusterProcesses.Cluster, o: Options, numbers: ReadonlyArray<NumberRow>) =>
  Effect.gen(function*() {
    const senders = numbers.slice(0, o.senders)
    const phones = new Set(senders.map((n) => n.phone))
    yield* stopRunners(cluster)
    yield* cluster.sql`
      UPDATE numbers SET linked = false, status = 'STOPPED'
      WHERE NOT (id = ANY(${`{${senders.map((n) => n.id).join(",")}}`}::bigint[]))`.pipe(Effect.orDie)
    const results: Array<{ runners: number; result: SendLoad.SendLoadResult; cores: Record<string, number>; entities: string; load: string }> = []
    let running = 0
    for (const count of o.runners) {
      while (running < count) yield* cluster.startRunner(running++)
      const runners = yield* settled(cluster, count, phones)
      const entities = runners.map((r) => r.entities ?? "?").join(" / ")
      yield* log(`${count} runner(s) settled (entities ${entities}); sending for ${o.seconds} s after ${o.warmup} s`)
      const live = cluster.runners.filter((r): r is Child => r !== null && r.process.exitCode === null)
      const { measured, result } = yield* SendLoad.runSendLoad(
        { url: cluster.apiUrl, senders, tag: `r${count}`, warmupSeconds: o.warmup, seconds: o.seconds },
        (load) => {
          const meter = coreMeter(() => ({
            api: [cluster.api.pid],
            runners: live.map((r) => r.pid),
            postgres: pidsNamed("postgres"),
            simulator: [cluster.simulator.pid],
            load: [load.pid]
          }))
          return new Promise<Record<string, number>>((resolve) => setTimeout(() => resolve(meter()), o.seconds * 1000))
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
    const up = yield* untilWorking(simUrl, new Set(sessions.map((_, i) => phoneOf(i))), started, 300_000)
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
          if (Date.now() > measureFrom && Date.now() <= endAt) {
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

// --- the report ---

const mib = (bytes: number) => (bytes / MiB).toFixed(0)
const secs = (ms: number | null) => (ms === null ? "never" : `${(ms / 1000).toFixed(1)} s`)

const perNumber = (none: Sample, full: Sample, n: number) => ({
  rssPer1000: ((full.rss - none.rss) / MiB / n) * 1000,
  heapPer1000: ((full.heap - none.heap) / MiB / n) * 1000,
  rssKiB: (full.rss - none.rss) / 1024 / n,
  heapKiB: (full.heap - none.heap) / 1024 / n
})

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const o = options(argv)
    const begun = Date.now()
    yield* Console.log(`cluster benchmark: ${machine()}`)
    yield* Console.log(
      `${o.numbers} numbers (${o.accounts} accounts of ${o.perAccount}); restart with ${o.restartRunners} runners; ` +
        `${o.senders} senders with ${o.runners.join(", ")} runners, ${o.seconds} s each after ${o.warmup} s`
    )
    const probes = mkdtempSync(join(tmpdir(), "wagate-bench-memory-"))
    const cluster = yield* ClusterProcesses.start(Math.max(o.restartRunners, ...o.runners), () => Effect.void, {}, {
      initialRunners: 1,
      spawn: MemoryProbe.spawnProbed(probes)
    })

    const memory = yield* memoryPart(cluster, o, probes)
    const runnerMem = perNumber(memory.none.runner, memory.full.runner, memory.numbers.length)
    const simMem = perNumber(memory.none.sim, memory.full.sim, memory.numbers.length)
    // The senders' peers write first, so their sends answer people (no first-message gap).
    const senders = memory.numbers.slice(0, o.senders)
    yield* pool(senders, 16, (n) => Effect.promise(() => ClusterLoad.inbound(cluster.simUrl, n, `hello ${n.phone}`)))
    yield* ClusterProcesses.untilTrue(
      Effect.map(
        cluster.sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE direction = 'in'`.pipe(Effect.orDie),
        ([row]) => row.n >= senders.length
      ),
      120_000,
      "the peers' first messages stored"
    )

    yield* log(`full restart: ${o.restartRunners} runners, ${memory.numbers.length} numbers`)
    const restart = yield* restartPart(cluster, o, memory.numbers)
    yield* log(`every number WORKING ${secs(restart.up.all)} after the runners' start (registered at ${secs(restart.registeredMs)})`)

    const sends = yield* sendsPart(cluster, o, memory.numbers)
    yield* log(`baseline: ${o.numbers} sessions and ${o.senders} senders straight on the simulator`)
    const base = yield* baseline(cluster.simUrl, o)

    // --- tables ---
    const n = memory.numbers.length
    const memoryRows = [
      ["runner", memory.none.runner, memory.full.runner, runnerMem, `${memory.entities} entities (numbers and accounts)`],
      ["standalone simulator (baseline)", memory.none.sim, memory.full.sim, simMem, `${n} sessions`]
    ] as const
    const memoryTable = [
      "| process | no number: RSS / heap MiB | " + n + " numbers: RSS / heap MiB | per 1,000 numbers: RSS / heap MiB | per number: RSS / heap KiB | holds |",
      "|---|---|---|---|---|---|",
      ...memoryRows.map(([name, none, full, per, holds]) =>
        `| ${name} | ${mib(none.rss)} / ${mib(none.heap)} | ${mib(full.rss)} / ${mib(full.heap)} | ` +
        `${Verdict.fixed(per.rssPer1000)} / ${Verdict.fixed(per.heapPer1000)} | ${Verdict.fixed(per.rssKiB)} / ${Verdict.fixed(per.heapKiB)} | ${holds} |`
      )
    ].join("\n")

    const m = restart.up
    const restartTable = [
      "| numbers | brought up by | processes registered | first WORKING | half | 90% | all WORKING | load average |",
      "|---|---|---|---|---|---|---|---|",
      `| ${n} | full restart: ${o.restartRunners} runners started | ${secs(restart.registeredMs)} | ${secs(m.first)} | ${secs(m.half)} | ${secs(m.most)} | ${secs(m.all)}${m.all === null ? ` (${m.last} of ${n})` : ""} | ${restart.load} |`,
      `| ${n} | one runner already up, a request each (16 at a time) | | | | | ${secs(memory.wakeMs)} | ${memory.load} |`,
      `| ${n} | baseline: sessions opened on the simulator from one process (32 at a time) | | ${secs(base.up.first)} | ${secs(base.up.half)} | ${secs(base.up.most)} | ${secs(base.up.all)} | |`
    ].join("\n")

    const one = sends.find((s) => s.runners === 1)
    const rate = (r: SendLoad.SendLoadResult) => r.accepted / r.seconds
    const cores = (c: Record<string, number>) =>
      `${["api", "runners", "postgres", "simulator", "load"].map((k) => (c[k] ?? 0).toFixed(2)).join(" / ")} (${Object.values(c).reduce((a, b) => a + b, 0).toFixed(2)})`
    const refused = (r: SendLoad.SendLoadResult) =>
      Object.keys(r.refused).length === 0 ? "0" : Object.entries(r.refused).map(([code, k]) => `${k}× ${code}`).join(", ")
    const sendsTable = [
      `| runners (+ 1 api) | senders | accepted/s | ratio to 1 runner | p50 ms | p99 ms | non-200 | busy cores: api / runners / postgres / simulator / load (sum) | entities per runner | load average |`,
      "|---|---|---|---|---|---|---|---|---|---|",
      ...sends.map((s) =>
        `| ${s.runners} | ${o.senders} | ${rate(s.result).toFixed(0)} | ${one === undefined ? "" : (rate(s.result) / rate(one.result)).toFixed(2)} | ` +
        `${s.result.p50.toFixed(0)} | ${s.result.p99.toFixed(0)} | ${refused(s.result)} | ${cores(s.cores)} | ${s.entities} | ${s.load} |`
      ),
      `| baseline: simulator directly | ${o.senders} | ${base.perSecond.toFixed(0)} | | | ${base.p99.toFixed(1)} | 0 | | | |`
    ].join("\n")

    const cpuCount = cpus().length
    const note = `On this machine (${cpuCount} cores) every process (api, runners, PostgreSQL, Redis, the simulator and ` +
      `the load) shares the same cores: the busiest run kept ${
        Math.max(...sends.map((s) => Object.values(s.cores).reduce((a, b) => a + b, 0))).toFixed(2)
      } of them busy. A second or third runner adds no CPU here, so the ratio shows what the cluster's coordination ` +
      `costs (entity calls crossing processes, shard locks, more PostgreSQL connections), not how it scales; that needs ` +
      `a core (or a machine) per runner, with the api and PostgreSQL on their own.`

    yield* Console.log(`\n### Memory per idle number entity\n\n${memoryTable}\n`)
    yield* Console.log(`### Bringing ${n} numbers up\n\n${restartTable}\n`)
    yield* Console.log(`### Accepted sends/s by runners\n\n${sendsTable}\n\n${note}\n`)
    yield* Console.log(`total ${((Date.now() - begun) / 1000).toFixed(0)} s; machine now: ${machine()}`)

    const none = "none named (figure recorded)"
    const broken = (r: SendLoad.SendLoadResult) =>
      Object.keys(r.refused).filter((code) => code === "transport" || code === "internal" || /^5\d\d/.test(code))
    yield* Verdict.verdict("cluster", [
      {
        what: `memory per idle number entity, runner (${n} numbers)`,
        target: none,
        measured: `${Verdict.fixed(runnerMem.rssPer1000)} MiB RSS, ${Verdict.fixed(runnerMem.heapPer1000)} MiB heap per 1,000 ` +
          `(${Verdict.fixed(runnerMem.rssKiB)} / ${Verdict.fixed(runnerMem.heapKiB)} KiB each)`,
        baseline: `simulator: ${Verdict.fixed(simMem.rssKiB)} KiB RSS, ${Verdict.fixed(simMem.heapKiB)} KiB heap per session`,
        met: true
      },
      {
        what: `${n} numbers WORKING after a full restart (${o.restartRunners} runners)`,
        target: "every number WORKING (no time named)",
        measured: m.all === null ? `only ${m.last} of ${n} within the deadline` : secs(m.all),
        baseline: `sessions opened directly: ${secs(base.up.all)}`,
        met: m.all !== null
      },
      ...sends.map((s): Verdict.Check => ({
        what: `accepted sends/s, ${s.runners} runner(s) + 1 api, ${o.senders} numbers at 1/s`,
        target: none,
        measured: `${rate(s.result).toFixed(0)}/s` + (one === undefined ? "" : ` (${(rate(s.result) / rate(one.result)).toFixed(2)} × 1 runner)`) +
          (broken(s.result).length > 0 ? `; errors: ${broken(s.result).map((c) => `${s.result.refused[c]}× ${c}`).join(", ")}` : ""),
        baseline: `simulator directly: ${base.perSecond.toFixed(0)}/s`,
        met: broken(s.result).length === 0 && s.result.accepted > 0
      }))
    ])
  }))
