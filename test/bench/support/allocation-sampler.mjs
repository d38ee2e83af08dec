/**
 * Preloaded into a benchmark's gateway (`--import`) for BENCH_ALLOC_PROF=FILE: V8's sampling heap
 * profiler, counting every allocation, those the collector has since freed included, between the
 * first SIGUSR2 (the measured window's start) and the second (its end), written to FILE as a
 * `.heapprofile` (Chrome DevTools reads it; test/bench/allocation-summary.ts sums it up). With
 * ALLOC_PROF_PROMOTED=1 (the benchmark's BENCH_ALLOC_PROMOTED=1) it leaves out what young
 * collections freed: what is left outlived the young generation (promoted, or still alive at
 * the window's end), the allocations that fill the old generation and bring on full collections.
 * Plain JavaScript: it is loaded before tsx.
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"

const file = process.env.ALLOC_PROF_FILE
const session = new Session()
session.connect()
let sampling = false
process.on("SIGUSR2", () => {
  if (!sampling) {
    sampling = true
    session.post("HeapProfiler.enable", () =>
      session.post("HeapProfiler.startSampling", {
        samplingInterval: 16384,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: process.env.ALLOC_PROF_PROMOTED !== "1"
      }))
    return
  }
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error) console.error("allocation sampler:", error)
    else writeFileSync(file, JSON.stringify(result.profile))
  })
})
