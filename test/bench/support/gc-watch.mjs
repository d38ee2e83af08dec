/**
 * Preloaded into the send benchmark's gateway (`--import`): what held its event loop over the
 * measured window, between the first SIGUSR2 (the window's start) and the second (its end),
 * written to GC_WATCH_FILE as JSON: the full (mark-compact) collections and their pauses, when
 * they fell in the window, and the event loop's delay (its largest and its p99). A window with a
 * full collection has a p99 of sends several times that of one without (docs/performance.md,
 * send path, thirteenth round), so the benchmark prints both beside its figures.
 * Plain JavaScript: it is loaded before tsx.
 */
import { renameSync, writeFileSync } from "node:fs"
import { constants, monitorEventLoopDelay, performance, PerformanceObserver } from "node:perf_hooks"

const file = process.env.GC_WATCH_FILE
const delay = monitorEventLoopDelay({ resolution: 10 })
/** @type {Array<{ atMs: number; pauseMs: number }>} */
const full = []
let startedAt = -1
/**
 * Now in the clock of --trace-gc's lines (since V8 started, where performance.now() counts from
 * the process' start), for the marks of the window in the gateway's log (BENCH_GATEWAY_LOG) that
 * `test/bench/gc-summary.ts` reads.
 */
const sinceV8 = () => Math.round(performance.now() - performance.nodeTiming.v8Start)
/** @param {ReadonlyArray<import("node:perf_hooks").PerformanceEntry>} entries */
const record = (entries) => {
  if (startedAt < 0) return
  for (const entry of entries) {
    if (entry.detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue
    full.push({ atMs: Math.round(entry.startTime - startedAt), pauseMs: Number(entry.duration.toFixed(1)) })
  }
}
const observer = new PerformanceObserver((list) => record(list.getEntries()))
observer.observe({ entryTypes: ["gc"] })

process.on("SIGUSR2", () => {
  if (startedAt < 0) {
    startedAt = performance.now()
    delay.enable()
    process.stderr.write(`gc-watch: the measured window starts at ${sinceV8()} ms\n`)
    return
  }
  const windowMs = performance.now() - startedAt
  process.stderr.write(`gc-watch: the measured window ends at ${sinceV8()} ms\n`)
  // What happened just before this signal is not in yet: the delay of a hold is recorded by a
  // timer that fires after it, and a collection's entry is made on a later turn of the loop and
  // given to the observer after that. The report waits for both (the delay then covers up to
  // 30 ms past the window, of an idle loop).
  setTimeout(() => {
    delay.disable()
    record(observer.takeRecords())
    observer.disconnect()
    const ms = (ns) => Math.round(ns / 1e6)
    const report = {
      windowMs: Math.round(windowMs),
      fullCollections: full.filter((c) => c.atMs <= windowMs),
      loopDelayMaxMs: ms(delay.max),
      loopDelayP99Ms: ms(delay.percentile(99))
    }
    // Whole or not at all for the benchmark, which reads the file as soon as it is there.
    if (file) {
      writeFileSync(`${file}.part`, JSON.stringify(report))
      renameSync(`${file}.part`, file)
    }
  }, 30)
})
