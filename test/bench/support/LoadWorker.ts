/**
 * The load generator, run as its own process (argv[2]: a JSON file with a `LoadSpec`). Without
 * `rate` it is a closed loop of `connections` keep-alive undici connections, each sending its
 * next request as soon as the previous answer's body is read: throughput at that concurrency.
 * With `rate` it is an open loop: requests are due at a fixed rate over a pool of `connections`,
 * and latency counts from when a request was due, so queueing behind a slow answer is included.
 * Requests cycle through the given paths and keys. Answers completed (open loop: requests due)
 * during the warm-up are not counted; the result (a `LoadResult`) is the last line of stdout.
 */
import { readFileSync } from "node:fs"
import { performance } from "node:perf_hooks"
import { setTimeout as sleep } from "node:timers/promises"
import { Client, Pool } from "undici"

export interface LoadSpec {
  readonly origin: string
  readonly paths: ReadonlyArray<string>
  /** Sent round-robin as `Authorization: Bearer <key>`. */
  readonly keys: ReadonlyArray<string>
  readonly connections: number
  /** Requests a second (open loop); without it, as many as the connections manage (closed loop). */
  readonly rate?: number | undefined
  readonly warmupMs: number
  readonly durationMs: number
}

export interface LoadResult {
  readonly requests: number
  readonly seconds: number
  readonly perSecond: number
  /** Milliseconds. */
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  /** Answers other than 200, by status (0: transport error). */
  readonly failures: Record<string, number>
  readonly bytesPerAnswer: number
}

const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]

const run = async (spec: LoadSpec): Promise<LoadResult> => {
  const url = new URL(spec.origin)
  const start = performance.now()
  const measureFrom = start + spec.warmupMs
  const end = measureFrom + spec.durationMs
  const latencies: Array<number> = []
  const failures: Record<string, number> = {}
  let bytes = 0
  let next = 0

  /**
   * Sends request `i` on `dispatcher` and counts its latency from `since`: in the closed loop if
   * it completes within the measured window, in the open loop if it was due within it.
   */
  const send = async (dispatcher: Client | Pool, i: number, since: number) => {
    const path = spec.paths[i % spec.paths.length]
    const key = spec.keys[i % spec.keys.length]
    let status = 0
    let size = 0
    try {
      const response = await dispatcher.request({ path, method: "GET", headers: { authorization: `Bearer ${key}` } })
      status = response.statusCode
      size = (await response.body.arrayBuffer()).byteLength
    } catch {
      status = 0
    }
    const done = performance.now()
    const at = spec.rate === undefined ? done : since
    if (at < measureFrom || at > end) return
    latencies.push(done - since)
    bytes += size
    if (status !== 200) failures[status] = (failures[status] ?? 0) + 1
  }

  if (spec.rate === undefined) {
    const connection = async () => {
      const client = new Client(url.origin, { pipelining: 1, keepAliveTimeout: 60_000 })
      while (performance.now() < end) await send(client, next++, performance.now())
      await client.close()
    }
    await Promise.all(Array.from({ length: spec.connections }, connection))
  } else {
    const pool = new Pool(url.origin, { connections: spec.connections, pipelining: 1, keepAliveTimeout: 60_000 })
    const interval = 1000 / spec.rate
    const pending = new Set<Promise<void>>()
    for (let due = start; due < end; due = start + next * interval) {
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      const sent = send(pool, next++, due).finally(() => pending.delete(sent))
      pending.add(sent)
    }
    await Promise.all(pending)
    await pool.close()
  }

  const sorted = Float64Array.from(latencies).sort()
  const seconds = spec.durationMs / 1000
  const round = (ms: number) => Math.round(ms * 100) / 100
  return {
    requests: sorted.length,
    seconds,
    perSecond: Math.round(sorted.length / seconds),
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.length === 0 ? 0 : sorted[sorted.length - 1]),
    failures,
    bytesPerAnswer: sorted.length === 0 ? 0 : Math.round(bytes / sorted.length)
  }
}

const spec = JSON.parse(readFileSync(process.argv[2], "utf8")) as LoadSpec
run(spec).then(
  (result) => process.stdout.write(`\n${JSON.stringify(result)}\n`),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
