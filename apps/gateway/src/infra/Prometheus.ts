/**
 * The process's Effect metrics in Prometheus' text exposition format (version 0.0.4), for
 * `GET /ops/v1/metrics`. Counters and gauges are one sample each; histograms give cumulative
 * `_bucket`s with `le`, `_sum` and `_count`; summaries their quantiles, `_sum` and `_count`;
 * frequencies one counter sample per value seen (label `key`).
 */
import * as Metric from "effect/Metric"
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"

/** A Prometheus name: characters matching `disallowed` become `_`, and it does not start with a digit. */
const sanitized = (disallowed: RegExp) => (name: string) => {
  const cleaned = name.replace(disallowed, "_")
  return /^[0-9]/.test(cleaned) ? `_${cleaned}` : cleaned
}
/** Metric names: letters, digits, `_` and `:`; label names: the same without `:`. */
const metricName = sanitized(/[^a-zA-Z0-9_:]/g)
const labelName = sanitized(/[^a-zA-Z0-9_]/g)
const labelValue = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")
const helpText = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

const number = (n: number | bigint) =>
  typeof n === "bigint"
    ? n.toString()
    : Number.isNaN(n)
    ? "NaN"
    : n === Number.POSITIVE_INFINITY
    ? "+Inf"
    : n === Number.NEGATIVE_INFINITY
    ? "-Inf"
    : String(n)

const labels = (pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.length === 0 ? "" : `{${pairs.map(([k, v]) => `${labelName(k)}="${labelValue(v)}"`).join(",")}}`

/** The exposition of the given metrics: one block (HELP, TYPE, samples) per metric name. */
export const render = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const blocks = new Map<string, { help: string | undefined; type: string; samples: Array<string> }>()
  const block = (name: string, type: string, help: string | undefined) => {
    let b = blocks.get(name)
    if (b === undefined) {
      b = { help, type, samples: [] }
      blocks.set(name, b)
    }
    return b
  }
  for (const pair of pairs) {
    const name = metricName(pair.metricKey.name)
    const help = Option.getOrUndefined(pair.metricKey.description)
    const tags = pair.metricKey.tags.map((t) => [t.key, t.value] as const)
    const state = pair.metricState
    if (MetricState.isCounterState(state)) {
      block(name, "counter", help).samples.push(`${name}${labels(tags)} ${number(state.count)}`)
    } else if (MetricState.isGaugeState(state)) {
      block(name, "gauge", help).samples.push(`${name}${labels(tags)} ${number(state.value)}`)
    } else if (MetricState.isHistogramState(state)) {
      const b = block(name, "histogram", help)
      for (const [le, count] of state.buckets) {
        b.samples.push(`${name}_bucket${labels([...tags, ["le", number(le)]])} ${number(count)}`)
      }
      if (!state.buckets.some(([le]) => le === Number.POSITIVE_INFINITY)) {
        b.samples.push(`${name}_bucket${labels([...tags, ["le", "+Inf"]])} ${number(state.count)}`)
      }
      b.samples.push(`${name}_sum${labels(tags)} ${number(state.sum)}`)
      b.samples.push(`${name}_count${labels(tags)} ${number(state.count)}`)
    } else if (MetricState.isSummaryState(state)) {
      const b = block(name, "summary", help)
      for (const [q, value] of state.quantiles) {
        b.samples.push(
          `${name}${labels([...tags, ["quantile", number(q)]])} ${Option.match(value, { onNone: () => "NaN", onSome: number })}`
        )
      }
      b.samples.push(`${name}_sum${labels(tags)} ${number(state.sum)}`)
      b.samples.push(`${name}_count${labels(tags)} ${number(state.count)}`)
    } else if (MetricState.isFrequencyState(state)) {
      const b = block(name, "counter", help)
      for (const [key, count] of state.occurrences) {
        b.samples.push(`${name}${labels([...tags, ["key", key]])} ${number(count)}`)
      }
    }
  }
  const lines: Array<string> = []
  for (const [name, b] of [...blocks].sort(([a], [c]) => a.localeCompare(c))) {
    if (b.help !== undefined) lines.push(`# HELP ${name} ${helpText(b.help)}`)
    lines.push(`# TYPE ${name} ${b.type}`)
    lines.push(...b.samples.sort())
  }
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`
}

/** Every metric of this process as it stands now. */
export const snapshot = (): string => render(Metric.unsafeSnapshot())
