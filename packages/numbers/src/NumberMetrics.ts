/**
 * What a runner's number entities count, for Prometheus (`GET /metrics` on a runner's
 * `METRICS_PORT`, or `GET /ops/v1/metrics` on an `all` process): acknowledgements applied, by
 * status, and incoming messages stored.
 */
import * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"

const ACKS = "wagate_acks"
const ACKS_OPTIONS = {
  description: "Acknowledgements of outgoing messages received from the network, by status",
  incremental: true
} as const

// One metric per status, its tag in its key: `Metric.tagged` at each update would build and look
// up the tagged key again every time (three times a send).
const ackCounters = new Map<string, Metric.Metric.Counter<number>>()

/**
 * Acknowledgements the network sent for outgoing messages, of one `status` (sent, delivered,
 * read, failed...): the series `wagate_acks{status}`.
 */
export const ackCounter = (status: string): Metric.Metric.Counter<number> => {
  let counter = ackCounters.get(status)
  if (counter === undefined) {
    counter = Metric.fromMetricKey(MetricKey.tagged(MetricKey.counter(ACKS, ACKS_OPTIONS), "status", status))
    ackCounters.set(status, counter)
  }
  return counter
}

/** Incoming messages received from the network and stored. */
export const incoming = Metric.counter("wagate_incoming_messages", {
  description: "Incoming messages received from the network and stored",
  incremental: true
})
