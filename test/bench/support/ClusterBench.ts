/**
 * What the scale-out benchmark (test/bench/cluster.ts) does to a cluster of processes started by
 * test/cluster/support/ClusterProcesses.ts: provision accounts and numbers, watch numbers come
 * up on the simulator, read the operator's cluster view, and measure processes' memory and CPU.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { loadavg } from "node:os"
import * as ClusterLoad from "../../cluster/support/ClusterLoad.js"
import type * as ClusterProcesses from "../../cluster/support/ClusterProcesses.js"
import { OPERATOR_TOKEN } from "../../cluster/support/ClusterProcesses.js"
import * as MemoryProbe from "./MemoryProbe.js"
import { type Child, cpuSeconds } from "./Processes.js"
import type * as SendLoad from "./SendLoad.js"

export const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))
export const load1 = () => loadavg()[0].toFixed(1)
export const log = (line: string) => Console.error(`[cluster bench] ${line}`)

const ops = { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" }

/** An operator API or simulator control call; anything but 2xx fails the run. */
export const call = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { ...init, headers: ops, signal: AbortSignal.timeout(60_000) })
    const text = await response.text()
    if (!response.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${response.status} ${text}`)
    return text === "" ? null : JSON.parse(text)
  })

/** Runs `f` over `items`, `concurrency` at a time. */
export const pool = <T>(items: ReadonlyArray<T>, concurrency: number, f: (item: T) => Effect.Effect<unknown>) =>
  Effect.forEach(items, f, { concurrency, discard: true })

export interface NumberRow extends SendLoad.Sender {
  readonly phone: string
}

/**
 * `accounts` accounts of `perAccount` numbers, the accounts and keys through the operator API
 * (account, credit, key), the numbers written to the database as test/cluster does: the first
 * `linked` as numbers linked before, which a runner connects when it wakes them; the others as
 * unlinked (STOPPED), for `linkAll`. Numbers of one account share its key.
 */
export const provision = (
  cluster: ClusterProcesses.Cluster,
  shape: { readonly accounts: number; readonly perAccount: number; readonly linked: number }
) =>
  Effect.gen(function*() {
    const keys = new Map<number, string>()
    yield* pool(Array.from({ length: shape.accounts }, (_, a) => a), 8, (a) =>
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
        yield* cluster.sql`UPDATE accounts SET numbers_limit = ${shape.perAccount} WHERE id = ${account.id}`
        const first = a * shape.perAccount
        const phones = Array.from({ length: shape.perAccount }, (_, i) => `770100${String(first + i).padStart(8, "0")}`)
        const insert = (some: ReadonlyArray<string>, linked: boolean) =>
          some.length === 0 ? Effect.void : cluster.sql`
            INSERT INTO numbers (account_id, phone, status, linked, connected_at)
            SELECT ${account.id}, phone, ${linked ? "STARTING" : "STOPPED"}, ${linked}, now() - interval '10 days'
            FROM unnest(${`{${some.join(",")}}`}::text[]) AS phone`
        yield* insert(phones.filter((_, i) => first + i < shape.linked), true)
        yield* insert(phones.filter((_, i) => first + i >= shape.linked), false)
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

/** Marks exactly `numbers` as linked (to be connected by whichever runner wakes them) and every other one as unlinked. */
export const linkOnly = (cluster: ClusterProcesses.Cluster, numbers: ReadonlyArray<NumberRow>) => {
  const ids = `{${numbers.map((n) => n.id).join(",")}}`
  return cluster.sql`
    UPDATE numbers SET linked = (id = ANY(${ids}::bigint[])),
      status = CASE WHEN id = ANY(${ids}::bigint[]) THEN 'STARTING' ELSE 'STOPPED' END`.pipe(Effect.orDie)
}

/** How many of `phones` the simulator sees WORKING with a session open. */
export const working = (simUrl: string, phones: ReadonlySet<string>) =>
  Effect.promise(() => ClusterLoad.working(simUrl, phones))

export interface Milestones {
  /** Milliseconds from the start to the first number, half, 90% and all of them WORKING (null: not reached). */
  readonly first: number | null
  readonly half: number | null
  readonly most: number | null
  readonly all: number | null
  /** How many were WORKING at the last look. */
  readonly last: number
}

/** Polls the simulator every second until every one of `phones` is WORKING, or `timeoutMs` after `since`. */
export const untilWorking = (simUrl: string, phones: ReadonlySet<string>, since: number, timeoutMs: number) =>
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

export interface ClusterRunner {
  readonly address: string
  readonly healthy: boolean
  readonly shards: number
  readonly entities: number | null
  readonly reported_at: string | null
}

/** The operator's cluster view (GET /ops/v1/cluster), the parts the benchmark reads. */
export const clusterView = (cluster: ClusterProcesses.Cluster) =>
  Effect.map(
    call(`${cluster.apiUrl}/ops/v1/cluster`),
    (view) => view as { readonly runners: ReadonlyArray<ClusterRunner>; readonly unassigned_shards: number }
  )

/** Runners that run and report (one that stopped removes its report; the others report every 5 s). */
export const activeRunners = (cluster: ClusterProcesses.Cluster) =>
  Effect.map(clusterView(cluster), (view) => view.runners.filter((r) => r.healthy && r.reported_at !== null))

export interface Sample {
  readonly rss: number
  readonly heap: number
}

/** Memory of a probed process after a full collection: the median of three readings a second apart. */
export const memoryOf = (dir: string, child: Child) =>
  Effect.gen(function*() {
    const readings: Array<MemoryProbe.Memory> = []
    for (let i = 0; i < 3; i++) {
      if (i > 0) yield* sleep(1000)
      readings.push(yield* MemoryProbe.readMemory(dir, child))
    }
    const median = (f: (m: MemoryProbe.Memory) => number) => readings.map(f).sort((a, b) => a - b)[1]
    return { rss: median((m) => m.rss), heap: median((m) => m.heapUsed) } satisfies Sample
  })

/**
 * Starts counting the CPU time of each group of processes; the function answers busy cores per
 * group since. A process that started in between counts from its start; one that ended in
 * between is not counted (its last reading is gone with it).
 */
export const coreMeter = (groups: () => Record<string, ReadonlyArray<number>>) => {
  const read = () => Object.entries(groups()).map(([name, pids]) => [name, pids.map((pid) => [pid, cpuSeconds(pid)] as const)] as const)
  const start = new Map(read().flatMap(([, pids]) => pids))
  const began = Date.now()
  return (): Record<string, number> => {
    const seconds = (Date.now() - began) / 1000
    return Object.fromEntries(read().map(([name, pids]) => [
      name,
      pids.reduce((total, [pid, cpu]) => total + (cpu > 0 ? cpu - (start.get(pid) ?? 0) : 0), 0) / seconds
    ]))
  }
}

/** The live (not exited) children among `children`. */
export const alive = (children: ReadonlyArray<Child | null>) =>
  children.filter((c): c is Child => c !== null && c.process.exitCode === null && c.process.signalCode === null)
