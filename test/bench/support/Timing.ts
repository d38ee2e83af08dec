/**
 * Latencies of work done one run after another, as the benchmarks that time a read or a sweep
 * against their baseline report them.
 */
import * as Effect from "effect/Effect"

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
