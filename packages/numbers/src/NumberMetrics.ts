/**
 * What a runner's number entities count, for Prometheus (`GET /metrics` on a runner's
 * `METRICS_PORT`, or `GET /ops/v1/metrics` on an `all` process): acknowledgements applied, by
 * status, and incoming messages stored.
 */
import * as Metric from "effect/Metric"

/** Acknowledgements the network sent for outgoing messages, by `status` (sent, delivered, read, failed...). */
export const acks = Metric.counter("wagate_acks", {
  description: "Acknowledgements of outgoing messages received from the network, by status",
  incremental: true
})

/** Incoming messages received from the network and stored. */
export const incoming = Metric.counter("wagate_incoming_messages", {
  description: "Incoming messages received from the network and stored",
  incremental: true
})
