/**
 * Send-path benchmark (issue 3): one `all` gateway process with the simulated network, 2,000
 * numbers each sending at its limit of one message a second, measured from a separate load
 * process; then the same sends handed straight to the simulator in one process, as the baseline.
 *
 *   npm run bench -- send [numbers=2000] [seconds=30] [--rate R] [--pool N] [--keyed] [--no-fail]
 *   (or npx tsx test/bench/send.ts [numbers] [seconds] [--rate R] [--pool N] [--keyed] [--no-fail])
 *
 * By default every number sends at its limit (one message a second, plus a margin), more than
 * one process can take: the figure is the saturation throughput, and the latency is mostly the
 * queue in front of the gateway. `--rate R` offers R sends a second in all instead, each number
 * sending every numbers/R seconds (never faster than its limit): the latency and CPU at that load.
 * The issue's target is a load the gateway keeps up with, so it is checked with `--rate 620`.
 *
 * `--pool N` starts the gateway with DATABASE_POOL_SIZE=N (default: the gateway's default), to
 * compare pool sizes.
 *
 * `--keyed` gives every send an Idempotency-Key of its own, as a client that retries safely
 * does: the cost of the key's lookup and record.
 *
 * Targets (issue 10): at least 600 accepted sends/s, p99 under 100 ms, under 1.5 ms of gateway
 * CPU per send; each is printed beside the baseline's figure, and a miss exits non-zero.
 *
 * Needs PostgreSQL on 127.0.0.1:5432 (database `test` reachable); creates and drops its own
 * database.
 */
import * as SimNetwork from "@wagate/whatsapp/sim/SimNetwork"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { randomBytes } from "node:crypto"
import * as diagnostics from "node:diagnostics_channel"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import pg from "pg"
import {
  type Child,
  cpuBetween,
  cpuByPid,
  cpuSeconds,
  GATEWAY_NODE_ARGS,
  nextMessage,
  rssMiB,
  spawnTs,
  stop
} from "./support/Processes.js"
import * as Verdict from "./support/Verdict.js"
import { freePortAsync as freePort } from "../support/Ports.js"

// Set by main from its arguments (the load process gets what it needs over IPC).
let NUMBERS = 2000
let SECONDS = 30
/** A number's period at its limit of one message a second, with a margin for jitter. */
const LIMIT_PERIOD_MS = 1030
/** The load's HTTP connections to the gateway. */
const LOAD_CONNECTIONS = 256
/** How often each number sends, in ms: at its limit, or less often for `--rate`. */
let PERIOD_MS = LIMIT_PERIOD_MS
/** DATABASE_POOL_SIZE of the gateway; undefined: its default. */
let POOL: number | undefined
/** Every send with an Idempotency-Key of its own. */
let KEYED = false
const ADMIN = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const TOKEN = "wag_op_bench"

/** The monotonic clock in microseconds, the clock of a CPU profile's timestamps. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

interface Result {
  readonly accepted: number
  readonly refused: Record<string, number>
  readonly latencies: Array<number>
  readonly seconds: number
  /** CPU milliseconds per accepted send: the gateway process, and PostgreSQL. */
  readonly cpu?: { readonly gateway: number; readonly postgres: number }
}

const summary = (name: string, r: Result, rssMb?: number) => {
  const sorted = [...r.latencies].sort((a, b) => a - b)
  return {
    name,
    "accepted/s": Math.round(r.accepted / r.seconds),
    "p50 ms": Number(percentile(sorted, 50).toFixed(2)),
    "p99 ms": Number(percentile(sorted, 99).toFixed(2)),
    refused: JSON.stringify(r.refused),
    "cpu ms/send": r.cpu === undefined ? "" : `${r.cpu.gateway.toFixed(2)} + pg ${r.cpu.postgres.toFixed(2)}`,
    "rss MB": rssMb === undefined ? "" : Math.round(rssMb),
    /** Gateway (or baseline process) CPU milliseconds per accepted send. */
    cpu: r.cpu === undefined ? Number.NaN : r.cpu.gateway
  }
}

// The load process: each number sends every `periodMs` to a peer who wrote first.
if (process.argv[2] === "--load") {
  // The numbers come over IPC: thousands of them do not fit in a command line.
  const { numbers, url, seconds, periodMs, keyed } = await new Promise<{
    numbers: Array<{ key: string; id: number; peer: string }>
    url: string
    seconds: number
    periodMs: number
    keyed: boolean
  }>((resolve) => process.once("message", (m) => resolve(m as any)))
  const { Agent, request } = await import("undici")
  let connected = 0
  diagnostics.subscribe("undici:client:connected", () => void connected++)
  const agent = new Agent({ connections: LOAD_CONNECTIONS, pipelining: 1 })
  // The connections are opened before the first send, as a client that has been running holds
  // them. Opened all at once by the first sends instead, they wait to be accepted: a busy Node
  // process accepts one connection per turn of its event loop (docs/performance.md).
  await Promise.all(Array.from({ length: LOAD_CONNECTIONS }, () =>
    request(`${url}/api/status`, { dispatcher: agent }).then((response) => response.body.dump())
  ))
  const loadStart = Date.now()
  const warmupUntil = loadStart + 3000
  const endAt = warmupUntil + seconds * 1000
  /** Every answer: the second of the load it came in, its latency and status. */
  const timeline: Array<readonly [number, number, number]> = []
  const latencies: Array<number> = []
  const refused: Record<string, number> = {}
  let accepted = 0
  process.send!({ started: true })
  await Promise.all(numbers.map(async (n, i) => {
    await new Promise((r) => setTimeout(r, (i * periodMs) / numbers.length))
    let k = 0
    while (Date.now() < endAt) {
      const started = performance.now()
      const headers: Record<string, string> = { authorization: `Bearer ${n.key}`, "content-type": "application/json" }
      if (keyed) headers["idempotency-key"] = `bench-${n.id}-${k}`
      const response = await request(`${url}/api/v1/messages/send`, {
        method: "POST",
        dispatcher: agent,
        headers,
        body: JSON.stringify({ to: n.peer, text: `update ${k++}`, from: n.id })
      })
      // A body that is not JSON is counted under its status, not a crash of the load.
      const text = await response.body.text()
      let body: { code?: string } = {}
      try {
        body = JSON.parse(text)
      } catch {
        body = { code: `${response.statusCode} (not JSON: ${JSON.stringify(text.slice(0, 40))})` }
      }
      const elapsed = performance.now() - started
      timeline.push([Math.floor((Date.now() - loadStart) / 1000), elapsed, response.statusCode])
      if (Date.now() > warmupUntil) {
        if (response.statusCode === 200) {
          accepted++
          latencies.push(elapsed)
        } else {
          refused[body.code ?? String(response.statusCode)] = (refused[body.code ?? String(response.statusCode)] ?? 0) + 1
        }
      }
      // Wait out the rest of the number's period (at least its second, with a margin for jitter).
      await new Promise((r) => setTimeout(r, Math.max(0, periodMs - elapsed)))
    }
  }))
  // For exploration: latency by second of the load (warm-up included), and connections opened.
  if (process.env.BENCH_TIMELINE) {
    const lines = [`connections opened: ${connected}`, `load started: ${loadStart} (${new Date(loadStart).toISOString()})`, "second\tanswers\trefused\tp50 ms\tp99 ms\tmax ms"]
    for (let second = 0; second <= (timeline.at(-1)?.[0] ?? -1); second++) {
      const answers = timeline.filter(([s]) => s === second)
      const ok = answers.filter(([, , status]) => status === 200).map(([, ms]) => ms).sort((a, b) => a - b)
      const at = (p: number) => (ok[Math.min(ok.length - 1, Math.floor(p * ok.length))] ?? 0).toFixed(0)
      lines.push([second, answers.length, answers.length - ok.length, at(0.5), at(0.99), at(1)].join("\t"))
    }
    writeFileSync(process.env.BENCH_TIMELINE, lines.join("\n") + "\n")
  }
  // Exits once the result is written: a large one would otherwise be cut off by the exit.
  process.send!({ accepted, refused, latencies, seconds }, () => process.exit(0))
}

const ops = async (url: string, method: string, path: string, body?: unknown): Promise<any> => {
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    // 503 is "try again" (a number slow to start on a busy machine): the gateway said so.
    if (response.status === 503 && attempt < 5) {
      await response.arrayBuffer()
      await new Promise((r) => setTimeout(r, 1000 * Number(response.headers.get("retry-after") ?? 1)))
      continue
    }
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
    return response.json()
  }
}

/** Adds a number; one whose 503 was retried although it had been added is found in the account. */
const addNumber = async (url: string, accountId: number, phone: string): Promise<{ id: number }> => {
  try {
    return (await ops(url, "POST", `/ops/v1/accounts/${accountId}/numbers`, { phone })).number
  } catch (error) {
    const account = await ops(url, "GET", `/ops/v1/accounts/${accountId}`)
    const found = account.numbers.find((n: { phone: string }) => n.phone === phone)
    if (found === undefined) throw error
    return found
  }
}

/** What `support/gc-watch.mjs` saw in the gateway over the measured window. */
interface Watch {
  readonly windowMs: number
  readonly fullCollections: ReadonlyArray<{ readonly atMs: number; readonly pauseMs: number }>
  readonly loopDelayMaxMs: number
  readonly loopDelayP99Ms: number
}

/** The watch's report, written by the gateway when the window ends (within seconds), if it came. */
const readWatch = async (file: string): Promise<Watch | undefined> => {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as Watch
    await new Promise((r) => setTimeout(r, 100))
  }
  return undefined
}

const describeWatch = (watch: Watch | undefined) => {
  if (watch === undefined) return "no report from the gateway's watch"
  const full = watch.fullCollections
  const collections = full.length === 0
    ? "no full collection"
    : `${full.length} full collection${full.length === 1 ? "" : "s"} (${
      full.map((c) => `at ${(c.atMs / 1000).toFixed(1)} s, a ${c.pauseMs} ms pause`).join("; ")
    })`
  return `${collections}; the event loop was held up to ${watch.loopDelayMaxMs} ms (p99 of its delay ${watch.loopDelayP99Ms} ms)`
}

/** Not a signal the gateway or its preloads (SIGUSR2) answer otherwise. */
const SNAPSHOT_SIGNAL = "SIGWINCH"

/**
 * Has the gateway write a heap snapshot into `dir` and waits until it is written: the gateway
 * writes it on its main thread, so it answers a request again only when the file is complete.
 */
const heapSnapshot = async (pid: number, base: string, dir: string) => {
  mkdirSync(dir, { recursive: true })
  const before = new Set(readdirSync(dir))
  process.kill(pid, SNAPSHOT_SIGNAL)
  let file: string | undefined
  while ((file = readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f))) === undefined) {
    await new Promise((r) => setTimeout(r, 200))
  }
  // The snapshot holds the event loop for minutes; the server then closes the connections that
  // were idle meanwhile as the first request may be sent on one of them: asked again on a new one.
  const deadline = Date.now() + 600_000
  for (;;) {
    try {
      await fetch(`${base}/api/status`, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) })
      break
    } catch (e) {
      if (Date.now() >= deadline) throw e
    }
  }
  console.error(`heap snapshot with ${NUMBERS} numbers linked: npx tsx test/bench/heap-summary.ts ${join(dir, file)} --per ${NUMBERS}`)
}

const gatewayRun = async (): Promise<{ result: Result; rss: number }> => {
  const name = `wagate_bench_${randomBytes(4).toString("hex")}`
  const admin = new pg.Client({ connectionString: ADMIN })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(ADMIN)
  url.pathname = `/${name}`
  const port = await freePort()
  if (process.env.BENCH_CPU_PROF) mkdirSync(process.env.BENCH_CPU_PROF, { recursive: true })
  const dataDir = mkdtempSync(join(tmpdir(), "wagate-bench-"))
  const gcWatchFile = join(dataDir, "gc-watch.json")
  const gateway = spawnTs("gateway", "apps/gateway/src/main.ts", {
    nodeArgs: [
      ...GATEWAY_NODE_ARGS,
      ...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF] : []),
      // What held the event loop over the measured window (full collections, loop delay).
      "--import",
      fileURLToPath(new URL("./support/gc-watch.mjs", import.meta.url)),
      ...(process.env.BENCH_ALLOC_PROF ? ["--import", fileURLToPath(new URL("./support/allocation-sampler.mjs", import.meta.url))] : []),
      // BENCH_HEAP_SNAPSHOT=DIR: a heap snapshot once the numbers are linked, before any send.
      ...(process.env.BENCH_HEAP_SNAPSHOT ? [`--heapsnapshot-signal=${SNAPSHOT_SIGNAL}`, `--diagnostic-dir=${process.env.BENCH_HEAP_SNAPSHOT}`] : []),
      // For exploration, e.g. BENCH_NODE_ARGS=--trace-gc BENCH_GATEWAY_LOG=/tmp/gateway.log
      ...(process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
    ],
    ...(process.env.BENCH_GATEWAY_LOG ? { logFile: process.env.BENCH_GATEWAY_LOG } : {}),
    env: {
      DATABASE_URL: url.toString(),
      WA_DRIVER: "simulator",
      HTTP_PORT: String(port),
      HTTP_HOST: "127.0.0.1",
      RUNNER_PORT: String(await freePort()),
      OPERATOR_TOKEN: TOKEN,
      DATA_DIR: dataDir,
      GC_WATCH_FILE: gcWatchFile,
      ...(process.env.BENCH_ALLOC_PROF ? { ALLOC_PROF_FILE: process.env.BENCH_ALLOC_PROF, ALLOC_PROF_PROMOTED: process.env.BENCH_ALLOC_PROMOTED ?? "" } : {}),
      ...(POOL === undefined ? {} : { DATABASE_POOL_SIZE: String(POOL) })
    }
  })
  let load: Child | undefined
  const base = `http://127.0.0.1:${port}`
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/api/status`)).ok) break
      } catch {
        if (i > 120) throw new Error("gateway did not start")
      }
      await new Promise((r) => setTimeout(r, 500))
    }
    await ops(base, "PUT", "/sim/v1/config", { scan_delay_ms: 0, delivered_delay_ms: 200, read_delay_ms: 1000 })
    console.error(`provisioning ${NUMBERS} numbers...`)
    const numbers: Array<{ key: string; id: number; peer: string }> = []
    for (let a = 0; a * 10 < NUMBERS; a++) {
      const account = await ops(base, "POST", "/ops/v1/accounts", { email: `bench${a}@example.kz`, company: "Bench" })
      await ops(base, "POST", `/ops/v1/accounts/${account.id}/credit`, { amount: 99_000 })
      const { key } = await ops(base, "POST", "/ops/v1/keys", { account_id: account.id })
      await Promise.all(Array.from({ length: Math.min(10, NUMBERS - a * 10) }, async (_, j) => {
        const phone = `7702${String(a * 10 + j).padStart(7, "0")}`
        const number = await addNumber(base, account.id, phone)
        const peer = `7703${String(a * 10 + j).padStart(7, "0")}`
        await ops(base, "POST", "/sim/v1/inbound", { to: phone, from: peer, text: "hello" })
        numbers.push({ key, id: number.id, peer })
      }))
    }
    // Let the numbers connect and the peers' first messages land.
    await new Promise((r) => setTimeout(r, 5000))
    // What the linked numbers cost while nothing is sent (timers, polling, keep-alives).
    const idle0 = cpuSeconds(gateway.pid)
    const idleStartUs = monotonicUs()
    await new Promise((r) => setTimeout(r, 5000))
    const idleCpu = (cpuSeconds(gateway.pid) - idle0) / 5
    const idleEndUs = monotonicUs()
    console.error(`idle: the gateway used ${(100 * idleCpu).toFixed(1)}% of a core with ${NUMBERS} numbers linked`)
    if (process.env.BENCH_HEAP_SNAPSHOT) await heapSnapshot(gateway.pid, base, process.env.BENCH_HEAP_SNAPSHOT)
    console.error(`sending for ${SECONDS} s...`)
    const started = spawnTs("load", import.meta.filename, { args: ["--load"], ipc: true, reportExit: false })
    load = started
    started.process.send({ numbers, url: base, seconds: SECONDS, periodMs: PERIOD_MS, keyed: KEYED })
    let rss = 0
    // PostgreSQL's backends, autovacuum workers among them, come and go during the window.
    const cpu = () => [cpuSeconds(gateway.pid), cpuByPid("postgres")] as const
    // Sample CPU over the measured window only (after the load's 3 s warm-up).
    const next = () => nextMessage(started)
    await next() // started
    // Transactions the benchmark's database committed (each statement outside a transaction is one).
    const commits = async () =>
      Number((await admin.query<{ n: string }>(`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1`, [name])).rows[0].n)
    let commitsAtStart: Promise<number> = Promise.resolve(0)
    let commitsAtEnd: Promise<number> = Promise.resolve(0)
    const cpuWindow = new Promise<[number, number]>((resolve) =>
      setTimeout(() => {
        const [g0, p0] = cpu()
        const startUs = monotonicUs()
        commitsAtStart = commits()
        // The window's watch (gc-watch.mjs) and the allocation sampler (BENCH_ALLOC_PROF) start
        // and stop on SIGUSR2.
        process.kill(gateway.pid, "SIGUSR2")
        setTimeout(() => {
          const [g1, p1] = cpu()
          commitsAtEnd = commits()
          process.kill(gateway.pid, "SIGUSR2")
          // The profile's summary (test/bench/profile-summary.ts) keeps to this window.
          if (process.env.BENCH_CPU_PROF) {
            writeFileSync(
              join(process.env.BENCH_CPU_PROF, "window.json"),
              JSON.stringify({ startUs, endUs: monotonicUs(), idle: { startUs: idleStartUs, endUs: idleEndUs } })
            )
          }
          resolve([g1 - g0, cpuBetween(p0, p1)])
        }, SECONDS * 1000 - 500)
      }, 3250)
    )
    const sampler = setInterval(() => {
      rss = Math.max(rss, rssMiB(gateway.pid))
    }, 1000)
    // How many of the gateway's pooled connections are busy at once (for DATABASE_POOL_SIZE).
    const busy: Array<number> = []
    let sampling = true
    const poolSampler = (async () => {
      while (sampling) {
        const { rows } = await admin.query<{ busy: number }>(
          `SELECT count(*) FILTER (WHERE state <> 'idle')::int AS busy FROM pg_stat_activity WHERE datname = $1`,
          [name]
        )
        busy.push(rows[0].busy)
        await new Promise((r) => setTimeout(r, 100))
      }
    })()
    const measured = (await next()) as Result
    clearInterval(sampler)
    sampling = false
    await poolSampler
    busy.sort((a, b) => a - b)
    console.error(
      `connections busy at once (of DATABASE_POOL_SIZE ${POOL ?? "default"}, every 100 ms): median ${percentile(busy, 50)}, ` +
        `p99 ${percentile(busy, 99)}, max ${busy[busy.length - 1] ?? 0} over ${busy.length} samples`
    )
    const [gatewayCpu, postgresCpu] = await cpuWindow
    const sendsInWindow = (measured.accepted * (SECONDS - 0.5)) / SECONDS
    const perSend = (seconds: number) => (1000 * seconds) / sendsInWindow
    // PostgreSQL counts commits with a delay of up to a second; over the window it is close enough.
    console.error(`PostgreSQL commits per accepted send: ${((await commitsAtEnd - await commitsAtStart) / sendsInWindow).toFixed(2)}`)
    console.error(`the measured window: ${describeWatch(await readWatch(gcWatchFile))}`)
    if (process.env.BENCH_ALLOC_PROF) {
      console.error(`allocations of the measured window: npx tsx test/bench/allocation-summary.ts ${process.env.BENCH_ALLOC_PROF} --sends ${Math.round(sendsInWindow)}`)
    }
    const result: Result = { ...measured, cpu: { gateway: perSend(gatewayCpu), postgres: perSend(postgresCpu) } }
    return { result, rss }
  } finally {
    // Every process this run started ends with it, on success, failure or interruption; the
    // gateway stops gracefully (its CPU profile is written on exit), killed if it takes too long.
    if (load !== undefined) await Effect.runPromise(stop(load))
    await Effect.runPromise(stop(gateway, 45_000))
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  }
}

/** The same number of senders handing messages straight to the simulated network. */
const baselineRun = () =>
  Effect.gen(function*() {
    const network = yield* SimNetwork.SimNetwork
    const driver = yield* WhatsAppDriver
    yield* network.updateConfig({ scanDelayMs: 0, deliveredDelayMs: 200, readDelayMs: 1000 })
    const sessions = yield* Effect.forEach(Array.from({ length: NUMBERS }, (_, i) => i), (i) =>
      Effect.gen(function*() {
        const session = yield* driver.open({ id: i, phone: `7704${String(i).padStart(7, "0")}`, linked: true }, () => Effect.void)
        return session
      }))
    yield* Effect.sleep("500 millis")
    const latencies: Array<number> = []
    let accepted = 0
    let cpuAtStart = process.cpuUsage()
    yield* Effect.sleep("3 seconds").pipe(Effect.andThen(() => (cpuAtStart = process.cpuUsage())), Effect.fork)
    const warmupUntil = Date.now() + 3000
    const endAt = warmupUntil + SECONDS * 1000
    yield* Effect.forEach(sessions, (session, i) =>
      Effect.gen(function*() {
        yield* Effect.sleep((i * PERIOD_MS) / NUMBERS)
        let k = 0
        while (Date.now() < endAt) {
          const started = performance.now()
          yield* session.send({ waMessageId: `B${i}-${k}`, to: `7705${String(i).padStart(7, "0")}`, content: { kind: "text", text: `update ${k++}` } })
          const elapsed = performance.now() - started
          if (Date.now() > warmupUntil) {
            accepted++
            latencies.push(elapsed)
          }
          yield* Effect.sleep(Math.max(0, PERIOD_MS - elapsed))
        }
      }), { concurrency: "unbounded", discard: true })
    const used = process.cpuUsage(cpuAtStart)
    return {
      accepted,
      refused: {},
      latencies,
      seconds: SECONDS,
      cpu: { gateway: (used.user + used.system) / 1000 / accepted, postgres: 0 }
    } satisfies Result
  }).pipe(Effect.scoped, Effect.provide(SimulatorDriver.layerTest()))

/** The load offered, in sends a second. */
const offered = () => `${Math.round((NUMBERS * 1000) / PERIOD_MS)}/s`

/** The targets, each beside the baseline's figure. */
const checks = (gateway: ReturnType<typeof summary>, baseline: ReturnType<typeof summary> | undefined): Array<Verdict.Check> => [
  {
    what: `accepted sends/s (${NUMBERS} numbers, ${offered()} offered)`,
    target: ">= 600",
    measured: String(gateway["accepted/s"]),
    baseline: baseline === undefined ? "" : String(baseline["accepted/s"]),
    met: gateway["accepted/s"] >= 600
  },
  {
    what: "send latency p99",
    target: "< 100 ms",
    measured: `${gateway["p99 ms"]} ms`,
    baseline: baseline === undefined ? "" : `${baseline["p99 ms"]} ms`,
    met: gateway["p99 ms"] < 100
  },
  {
    what: "gateway CPU per send",
    target: "< 1.5 ms",
    measured: `${Verdict.fixed(gateway.cpu, 2)} ms`,
    baseline: baseline === undefined ? "" : `${Verdict.fixed(baseline.cpu, 2)} ms`,
    met: gateway.cpu < 1.5
  }
]

/**
 * `[numbers] [seconds] [--rate R] [--pool N] [--keyed]`; BENCH_ONLY=gateway or BENCH_ONLY=baseline runs one
 * side, e.g. to profile it.
 */
export const main = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { positionals, values } = parseArgs({
      args: [...argv],
      options: { pool: { type: "string" }, rate: { type: "string" }, keyed: { type: "boolean" } },
      allowPositionals: true
    })
    NUMBERS = Number(positionals[0] ?? 2000)
    SECONDS = Number(positionals[1] ?? 30)
    POOL = values.pool === undefined ? undefined : Number(values.pool)
    KEYED = values.keyed === true
    if (POOL !== undefined && !(Number.isInteger(POOL) && POOL >= 2)) {
      return yield* Effect.dieMessage(`--pool must be a whole number of at least 2, not ${values.pool}`)
    }
    const rate = values.rate === undefined ? undefined : Number(values.rate)
    if (rate !== undefined && !(rate > 0)) {
      return yield* Effect.dieMessage(`--rate must be a positive number, not ${values.rate}`)
    }
    PERIOD_MS = rate === undefined ? LIMIT_PERIOD_MS : Math.max(LIMIT_PERIOD_MS, Math.round((NUMBERS * 1000) / rate))
    console.error(
      `send benchmark: ${NUMBERS} numbers each sending every ${PERIOD_MS} ms (${offered()} offered), ` +
        `${SECONDS} s measured, DATABASE_POOL_SIZE ${POOL ?? "default"}${KEYED ? ", every send with an Idempotency-Key" : ""}`
    )
    const only = process.env.BENCH_ONLY
    let gateway: ReturnType<typeof summary> | undefined
    let baseline: ReturnType<typeof summary> | undefined
    if (only !== "baseline") {
      const run = yield* Effect.promise(gatewayRun)
      gateway = summary("gateway (HTTP -> entity -> PostgreSQL -> simulator)", run.result, run.rss)
    }
    if (only !== "gateway") {
      baseline = summary("baseline (simulator called directly)", yield* baselineRun(), process.memoryUsage().rss / 1024 / 1024)
    }
    const rows = [gateway, baseline].filter((r) => r !== undefined)
    console.table(rows.map(({ cpu: _, ...row }) => row))
    console.log(JSON.stringify({ numbers: NUMBERS, seconds: SECONDS, periodMs: PERIOD_MS, pool: POOL ?? null, keyed: KEYED, rows }))
    if (gateway !== undefined) yield* Verdict.verdict("send", checks(gateway, baseline))
  })

if (import.meta.url === `file://${process.argv[1]}` && process.argv[2] !== "--load") {
  NodeRuntime.runMain(Verdict.run(main, process.argv.slice(2)))
}
