/**
 * The result table of a benchmark run, as Markdown (printed, and pasted into docs/performance.md).
 */
import type { Measured } from "./Load.js"

export interface Row {
  readonly mix: string
  /** "16 conns" (closed loop) or "250/s" (open loop). */
  readonly load: string
  readonly server: string
  readonly result: Measured
  /** Throughput relative to the baseline of the same mix and concurrency. */
  readonly ratio: number | null
}

const failures = (result: Measured) => {
  const entries = Object.entries(result.failures)
  return entries.length === 0 ? "0" : entries.map(([status, n]) => `${n}×${status}`).join(" ")
}

/** The table's header lines, then one line per row. */
export const table = (rows: ReadonlyArray<Row>): string => {
  const header = [
    "mix",
    "load",
    "server",
    "req/s",
    "p50 ms",
    "p99 ms",
    "max ms",
    "ratio",
    "server CPU µs/req",
    "RSS MiB",
    "cores: server / pg / redis / load",
    "non-200"
  ]
  const lines = rows.map(({ load, mix, ratio, result, server }) => [
    mix,
    load,
    server,
    String(result.perSecond),
    result.p50.toFixed(1),
    result.p99.toFixed(1),
    result.max.toFixed(0),
    ratio === null ? "" : ratio.toFixed(2),
    result.perSecond === 0 ? "" : String(Math.round(((result.cores.server ?? 0) / result.perSecond) * 1e6)),
    String(result.serverRssMiB),
    ["server", "postgres", "redis", "load"].map((name) => (result.cores[name] ?? 0).toFixed(2)).join(" / "),
    failures(result)
  ])
  return [header, header.map(() => "---"), ...lines].map((cells) => `| ${cells.join(" | ")} |`).join("\n")
}
