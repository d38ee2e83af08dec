/**
 * Latencies of work done one run after another, as the benchmarks that time a read or a sweep
 * against their baseline report them.
 */
import * as Effect from "effect/Effect"
import type * as Verdict from "./Verdict.js"

/** The `p`th percentile (nearest rank) of ascending `sorted`. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/** `once` run `warmup` times, then `runs` times one after another: the median and p99 of those, in ms. */
export const sequential = <E, R>(once: Effect.Effect<unknown, E, R>, options: { readonly warmup: number; readonly runs: number }) =>
  Effect.gen(function*() {
    for (let i = 0; i < options.warmup; i++) yield* once
    const times: Array<number> = []
    for (let i = 0; i < options.runs; i++) {
      const started = performance.now()
      yield* once
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    return { p50: percentile(times, 50), p99: percentile(times, 99) }
  })

/** A median and a p99, in ms. */
export interface Latencies {
  readonly p50: number
  readonly p99: number
}

/** The check that `measured`'s median is at most `ratio` times `baseline`'s, each p99 beside it. */
export const medianAtMost = (
  what: string,
  ratio: number,
  measured: Latencies,
  baseline: Latencies,
  baselineIs: string
): Verdict.Check => ({
  what,
  target: `<= ${ratio}x`,
  measured: `${measured.p50.toFixed(2)} ms (${(measured.p50 / baseline.p50).toFixed(2)}x), p99 ${measured.p99.toFixed(2)} ms`,
  baseline: `${baseline.p50.toFixed(2)} ms, p99 ${baseline.p99.toFixed(2)} ms (${baselineIs})`,
  met: measured.p50 <= ratio * baseline.p50
})
