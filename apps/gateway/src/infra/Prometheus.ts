/**
 * The process's metrics in Prometheus' text exposition format, produced by prom-client: its
 * default process and Node.js metrics (CPU, memory, event loop lag, GC), the metrics the gateway
 * keeps in prom-client itself (entity calls in flight, sends...), the cluster-wide gauges of an api
 * process's scrape (from a reading of `ClusterView` made for that scrape), and every metric the packages count with Effect's `Metric`
 * (`wagate_zombie_restarts`, `wagate_acks`...), copied into prom-client at each scrape: Effect
 * counters and frequencies become counters (a frequency's values under the label `key`), gauges
 * gauges, tags labels. The packages keep counting with Effect, which they depend on anyway; the
 * exposition is the library's.
 */
import type { ClusterView } from "@wagate/domain/ClusterView"
import * as IncomingFailures from "@wagate/numbers/IncomingFailures"
import * as NumberMetrics from "@wagate/numbers/NumberMetrics"
import * as Payments from "@wagate/numbers/billing/Payments"
import * as RequestGuard from "@wagate/numbers/RequestGuard"
import * as Watchdog from "@wagate/whatsapp/baileys/Watchdog"
import * as Metric from "effect/Metric"
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as Prom from "prom-client"

export const registry = new Prom.Registry()
Prom.collectDefaultMetrics({ register: registry })

/** The exposition's media type (text format 0.0.4). */
export const contentType = registry.contentType

// --- metrics kept in prom-client itself ---

let callsInFlight = 0

/** Counts a call to an entity from this process while it waits for its reply. */
export const callStarted = () => {
  callsInFlight++
}
export const callEnded = () => {
  callsInFlight--
}

new Prom.Gauge({
  name: "wagate_entity_calls_in_flight",
  help: "Calls from this process to number and account entities waiting for their reply (their mailboxes' depth as seen by the caller)",
  registers: [registry],
  collect() {
    this.set(callsInFlight)
  }
})

/** Sends accepted by this process's API (REST and MCP); replays of an Idempotency-Key not counted. */
export const sendsAccepted = new Prom.Counter({
  name: "wagate_sends_accepted",
  help: "Sends accepted (handed to the number's entity and recorded), REST and MCP",
  registers: [registry]
})

/** Promises that failed with nobody waiting for them (main.ts logs each; the process goes on). */
export const strayFailures = new Prom.Counter({
  name: "wagate_stray_failures",
  help: "Promises that failed with nobody waiting for them (a library's stray command); each is logged and the process goes on",
  registers: [registry]
})

/** Sends refused, by the error code answered (rate_limited, not_connected, invalid_param, capacity...). */
export const sendRefusals = new Prom.Counter({
  name: "wagate_send_refusals",
  help: "Sends refused, by the error code answered",
  labelNames: ["code"],
  registers: [registry]
})

// --- the cluster-wide gauges, from a fresh reading of the cluster at each scrape ---

/** The stored statuses, and the view's for numbers that should run and that no runner runs. */
const STATUSES = ["STARTING", "SCAN_QR_CODE", "WORKING", "STOPPED", "FAILED", "WAITING_FOR_RUNNER", "WAKING"]

/**
 * The cluster-wide gauges of one reading of `ClusterView`, in a registry of their own made for
 * the scrape: they are in no process's registry, so a scrape without a reading (a runner's)
 * has none of them, and no scrape shows the values of an earlier one.
 */
const clusterGauges = (view: typeof ClusterView.Type): Prom.Registry => {
  const registers = new Prom.Registry()
  const gauge = (name: string, help: string, labelNames: ReadonlyArray<string> = []) =>
    new Prom.Gauge({ name, help, labelNames, registers: [registers] })
  const runnerHealthy = gauge("wagate_runner_healthy", "1 when the cluster counts the runner healthy, else 0", ["runner"])
  const runnerShards = gauge("wagate_runner_shards", "Shards the runner last reported owning", ["runner"])
  const runnerEntities = gauge(
    "wagate_runner_entities",
    "Entities (numbers, accounts, webhooks...) the runner last reported running",
    ["runner"]
  )
  for (const r of view.runners) {
    runnerHealthy.set({ runner: r.address }, r.healthy ? 1 : 0)
    runnerShards.set({ runner: r.address }, r.shards)
    if (r.entities !== null) runnerEntities.set({ runner: r.address }, r.entities)
  }
  gauge("wagate_unassigned_shards", "Shards no runner reported owning").set(view.unassigned_shards)
  const numbers = gauge(
    "wagate_numbers",
    "Numbers by connection status; WAITING_FOR_RUNNER: no healthy runner holds their shard, WAKING: not yet woken by the runner that took it over",
    ["status"]
  )
  for (const status of STATUSES) numbers.set({ status }, 0)
  for (const [status, n] of Object.entries(view.numbers.by_status)) numbers.set({ status }, n)
  gauge("wagate_webhook_backlog", "Webhook events neither delivered nor failed, of accounts whose endpoint is on")
    .set(view.webhooks.backlog)
  gauge("wagate_webhook_lag_seconds", "Age of the oldest of those events (0 when none)")
    .set(view.webhooks.lag_seconds ?? 0)
  gauge("wagate_webhook_held_accounts", "Accounts whose webhook endpoint is turned off with events waiting for it")
    .set(view.webhooks.held_accounts)
  gauge(
    "wagate_cluster_messages_unprocessed",
    "Persisted requests not yet processed (cluster_messages), numbers' keep-alive requests left out"
  ).set(view.cluster_messages.unprocessed)
  gauge("wagate_cluster_message_oldest_age_seconds", "Age of the oldest of those requests (0 when none)")
    .set(view.cluster_messages.oldest_age_seconds ?? 0)
  return registers
}

// --- Effect's metrics, copied in at each scrape ---

/** A Prometheus name: characters other than letters, digits, `_` (and `:` in metric names) become `_`. */
const sanitized = (disallowed: RegExp) => (name: string) => {
  const cleaned = name.replace(disallowed, "_")
  return /^[0-9]/.test(cleaned) ? `_${cleaned}` : cleaned
}
const metricName = sanitized(/[^a-zA-Z0-9_:]/g)
const labelName = sanitized(/[^a-zA-Z0-9_]/g)

const bridged = new Map<string, { readonly metric: Prom.Counter | Prom.Gauge; readonly shape: string }>()

const copyEffectMetrics = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>) => {
  const byName = new Map<string, Array<MetricPair.MetricPair.Untyped>>()
  for (const pair of pairs) {
    const state = pair.metricState
    if (!MetricState.isCounterState(state) && !MetricState.isGaugeState(state) && !MetricState.isFrequencyState(state)) {
      continue
    }
    const name = metricName(pair.metricKey.name)
    byName.set(name, [...(byName.get(name) ?? []), pair])
  }
  for (const [name, group] of byName) {
    const kind = MetricState.isGaugeState(group[0].metricState) ? "gauge" : "counter"
    const labels = new Set<string>()
    for (const pair of group) {
      for (const tag of pair.metricKey.tags) labels.add(labelName(tag.key))
      if (MetricState.isFrequencyState(pair.metricState)) labels.add("key")
    }
    const labelNames = [...labels].sort()
    const shape = `${kind}:${labelNames.join(",")}`
    let entry = bridged.get(name)
    // A name the gateway already keeps in prom-client wins.
    if (entry === undefined && registry.getSingleMetric(name) !== undefined) continue
    if (entry === undefined || entry.shape !== shape) {
      if (entry !== undefined) registry.removeSingleMetric(name)
      const help = Option.getOrElse(group[0].metricKey.description, () => name)
      const metric = kind === "gauge"
        ? new Prom.Gauge({ name, help, labelNames, registers: [registry] })
        : new Prom.Counter({ name, help, labelNames, registers: [registry] })
      entry = { metric, shape }
      bridged.set(name, entry)
    }
    const metric = entry.metric
    metric.reset()
    for (const pair of group) {
      const tags: Record<string, string> = {}
      for (const tag of pair.metricKey.tags) tags[labelName(tag.key)] = tag.value
      const state = pair.metricState
      if (MetricState.isGaugeState(state)) {
        ;(metric as Prom.Gauge).set(tags, Number(state.value))
      } else if (MetricState.isCounterState(state)) {
        ;(metric as Prom.Counter).inc(tags, Number(state.count))
      } else if (MetricState.isFrequencyState(state)) {
        for (const [key, count] of state.occurrences) (metric as Prom.Counter).inc({ ...tags, key }, count)
      }
    }
  }
}

// Effect registers a metric at its first update: these are exposed (at 0) from the start, so an
// alert on their rate has a series before the first event.
for (
  const counter of [
    Watchdog.zombieRestarts,
    RequestGuard.requestDefects,
    RequestGuard.storageFailures,
    IncomingFailures.failures,
    NumberMetrics.incoming,
    Payments.notCreditedPayments,
    Payments.notCreditedTiyn
  ]
) counter.unsafeUpdate(0, [])

/**
 * Every metric of this process as it stands now, in the text exposition format; with a reading
 * of the cluster, its cluster-wide gauges too (an api process's scrapes).
 */
export const snapshot = (cluster?: typeof ClusterView.Type): Promise<string> => {
  copyEffectMetrics(Metric.unsafeSnapshot())
  return cluster === undefined ? registry.metrics() : Prom.Registry.merge([registry, clusterGauges(cluster)]).metrics()
}
