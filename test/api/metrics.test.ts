/**
 * Prometheus metrics, scraped and parsed as Prometheus would: GET /ops/v1/metrics (operator
 * token) on the api, with the cluster-wide gauges, and GET /metrics on METRICS_PORT, without a
 * token: an api process's with the cluster-wide gauges too, a runner's without them.
 */
import * as MachineId from "@effect/cluster/MachineId"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import parse, { type Family } from "parse-prometheus-text-format"
import * as MetricsServer from "../../apps/gateway/src/infra/MetricsServer.js"
import { eventually, provision, uniquePhone } from "../support/Fixtures.js"
import {
  freshDatabase,
  OPERATOR_TOKEN,
  type RunningGateway,
  simulatedNetwork,
  sql,
  startGateway,
  stoppable
} from "../support/TestGateway.js"
import { freePort } from "../support/Ports.js"

const scrape = (gateway: RunningGateway) =>
  Effect.gen(function*() {
    const response = yield* gateway.http.get("/ops/v1/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
    return parse(yield* response.text)
  }).pipe(Effect.orDie)

/** GET /metrics on a METRICS_PORT, once it listens. */
const scrapePort = (port: number) =>
  Effect.gen(function*() {
    const response = yield* eventually(
      Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).catch(() => null)),
      (r) => r !== null,
      10_000
    )
    assert.strictEqual(response!.status, 200)
    assert.strictEqual(response!.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8")
    return parse(yield* Effect.promise(() => response!.text()))
  })

/** The gauges read from the cluster's state in PostgreSQL, the same for every api process. */
const CLUSTER_GAUGES = [
  "wagate_runner_healthy",
  "wagate_runner_shards",
  "wagate_runner_entities",
  "wagate_unassigned_shards",
  "wagate_numbers",
  "wagate_webhook_backlog",
  "wagate_webhook_lag_seconds",
  "wagate_webhook_held_accounts",
  "wagate_cluster_messages_unprocessed",
  "wagate_cluster_message_oldest_age_seconds"
]

const family = (families: ReadonlyArray<Family>, name: string) => {
  const found = families.find((f) => f.name === name)
  assert.isDefined(found, `${name} is exposed`)
  return found!
}

/** The sample of `name` whose labels include `labels` (0 when there is none, or no such metric yet). */
const value = (families: ReadonlyArray<Family>, name: string, labels: Record<string, string> = {}) => {
  const sample = families.find((f) => f.name === name)?.metrics.find((m) =>
    Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)
  )
  return sample === undefined ? 0 : Number(sample.value)
}

const send = (gateway: RunningGateway, key: string, body: unknown) =>
  gateway.http.execute(
    HttpClientRequest.post("/api/v1/messages/send").pipe(
      HttpClientRequest.setHeaders({ authorization: `Bearer ${key}` }),
      HttpClientRequest.bodyUnsafeJson(body)
    )
  ).pipe(
    Effect.flatMap((r) => Effect.map(r.json, (body) => `${r.status} ${(body as { code?: string }).code ?? "ok"}`)),
    Effect.orDie
  )

describe("Prometheus metrics", () => {
  it.scopedLive("counts sends and refusals by code, acks and incoming messages, and shows the cluster's state", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const acme = yield* provision(gateway.ops, { numbers: 1 })
      const before = yield* scrape(gateway)

      const peer = uniquePhone()
      yield* gateway.sim.inbound({ to: acme.numbers[0].phone, from: peer, text: "Hello, is the shop open?" })
      assert.strictEqual(yield* send(gateway, acme.accountKey, { to: peer, text: "Yes, until 8" }), "200 ok")
      assert.strictEqual(yield* send(gateway, acme.accountKey, { to: "123", text: "Hi" }), "400 invalid_to")

      // Acks arrive from the network after the send (delivered after 0.5 s in the simulator).
      const after = yield* eventually(
        scrape(gateway),
        (m) => value(m, "wagate_acks", { status: "delivered" }) > value(before, "wagate_acks", { status: "delivered" }),
        15_000
      )
      assert.strictEqual(value(after, "wagate_sends_accepted") - value(before, "wagate_sends_accepted"), 1)
      assert.strictEqual(
        value(after, "wagate_send_refusals", { code: "invalid_to" }) - value(before, "wagate_send_refusals", { code: "invalid_to" }),
        1
      )
      assert.isAtLeast(value(after, "wagate_incoming_messages") - value(before, "wagate_incoming_messages"), 1)
      assert.strictEqual(family(after, "wagate_acks").type, "COUNTER")

      // The cluster as the operator's view reads it: this process's runner, the number WORKING
      // (once the runner has reported the shard it holds).
      yield* eventually(scrape(gateway), (m) => value(m, "wagate_numbers", { status: "WORKING" }) === 1, 15_000)
      assert.strictEqual(value(after, "wagate_numbers", { status: "FAILED" }), 0)
      const runners = family(after, "wagate_runner_entities").metrics
      assert.strictEqual(runners.length, 1)
      assert.strictEqual(value(after, "wagate_runner_healthy", { runner: runners[0].labels!.runner }), 1)
      // The runner reports its shards every 5 s; its first report may predate acquiring them.
      yield* eventually(scrape(gateway), (m) => value(m, "wagate_unassigned_shards") === 0, 15_000)
      assert.strictEqual(family(after, "wagate_webhook_lag_seconds").type, "GAUGE")
      assert.isAtLeast(value(after, "wagate_cluster_messages_unprocessed"), 0)
      assert.strictEqual(value(after, "wagate_entity_calls_in_flight"), 0)
      // The names that existed before, and the library's process metrics.
      for (const name of ["wagate_zombie_restarts", "wagate_number_request_defects", "wagate_number_storage_failures", "wagate_incoming_store_failures"]) {
        assert.strictEqual(family(after, name).type, "COUNTER")
      }
      assert.isAbove(value(after, "process_resident_memory_bytes"), 0)
      // The cluster library's own gauges: entities by type (each entity manager sets it once a second).
      yield* eventually(scrape(gateway), (m) => value(m, "effect_cluster_entities", { type: "Number" }) >= 1, 15_000)
    }))

  it.scopedLive("the cluster-message gauges show no backlog with idle linked numbers, and a request that waits", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      yield* provision(gateway.ops, { numbers: 2 })
      yield* eventually(scrape(gateway), (m) => value(m, "wagate_numbers", { status: "WORKING" }) === 2, 15_000)
      // Each linked number's keep-alive request stays unprocessed for as long as the number runs.
      const keptAlive = yield* eventually(
        sql(gateway.database, (sql) =>
          sql<{ n: number }>`SELECT count(*)::int AS n FROM cluster_messages WHERE NOT processed AND tag = 'Cluster/Entity/keepAlive'`),
        (rows) => rows[0]!.n >= 2
      )
      assert.isAtLeast(keptAlive[0]!.n, 2)
      const idle = yield* scrape(gateway)
      assert.strictEqual(value(idle, "wagate_cluster_messages_unprocessed"), 0)
      assert.strictEqual(value(idle, "wagate_cluster_message_oldest_age_seconds"), 0)

      // An export's run stored a minute ago in a shard no runner owns: work waiting.
      const id = String(Snowflake.make({ timestamp: Date.now() - 60_000, machineId: MachineId.make(7), sequence: 0 }))
      yield* sql(gateway.database, (sql) => sql`
        INSERT INTO cluster_messages (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload, headers,
                                      trace_id, span_id, sampled, processed, request_id)
        VALUES (${id}, 'Run-900001', 'unowned:1', 'Export', '900001', 0, 'Run', '{"exportId":900001}', '{}',
                'noop', 'noop', false, false, ${id})`)
      const waiting = yield* scrape(gateway)
      assert.strictEqual(value(waiting, "wagate_cluster_messages_unprocessed"), 1)
      assert.isAtLeast(value(waiting, "wagate_cluster_message_oldest_age_seconds"), 60)
    }))

  it.scopedLive("METRICS_PORT of an api process reads the cluster at each scrape; a runner's has no cluster-wide gauges", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const runnerMetrics = yield* freePort
      const runnerGateway = yield* stoppable(
        startGateway(database, { sim: network, settings: { role: "runner", metricsHost: "127.0.0.1", metricsPort: Option.some(runnerMetrics) } })
      )
      const apiMetrics = yield* freePort
      const api = yield* startGateway(database, { role: "api", sim: network, settings: { metricsHost: "127.0.0.1", metricsPort: Option.some(apiMetrics) } })
      yield* provision(api.ops, { numbers: 1 })

      // The runner reports its shards every 5 s; its first report may predate acquiring them.
      const running = yield* eventually(
        scrapePort(apiMetrics),
        (m) => value(m, "wagate_unassigned_shards") === 0 && value(m, "wagate_numbers", { status: "WORKING" }) === 1,
        20_000
      )
      const runners = family(running, "wagate_runner_shards").metrics
      assert.strictEqual(runners.length, 1)
      assert.strictEqual(Number(runners[0].value), 300)
      assert.strictEqual(value(running, "wagate_runner_healthy", { runner: runners[0].labels!.runner }), 1)
      assert.strictEqual(family(running, "wagate_webhook_backlog").type, "GAUGE")
      // The process's own metrics beside them.
      assert.isAbove(value(running, "process_resident_memory_bytes"), 0)
      assert.strictEqual(family(running, "wagate_entity_calls_in_flight").type, "GAUGE")
      // The operator's endpoint reads the same (and leaves nothing behind for the next scrape).
      const operator = yield* scrape(api)
      assert.strictEqual(value(operator, "wagate_unassigned_shards"), 0)

      // A runner exports what it counts itself, and none of the cluster-wide gauges it never reads.
      const runner = yield* scrapePort(runnerMetrics)
      assert.strictEqual(family(runner, "wagate_zombie_restarts").type, "COUNTER")
      assert.deepStrictEqual(runner.filter((f) => CLUSTER_GAUGES.includes(f.name)).map((f) => f.name), [])

      // The runner stops: the api's next scrape says so, with no scrape of /ops/v1/metrics first.
      yield* runnerGateway.stop
      const stopped = yield* scrapePort(apiMetrics)
      assert.strictEqual(value(stopped, "wagate_unassigned_shards"), 300)
      assert.deepStrictEqual(family(stopped, "wagate_runner_shards").metrics.map((m) => Number(m.value)).filter((n) => n > 0), [])
    }), { timeout: 60_000 })

  it.scopedLive("METRICS_PORT of an api process whose database cannot be read serves the process's metrics without the cluster-wide gauges", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const port = yield* freePort
      const api = yield* startGateway(database, { role: "api", settings: { metricsHost: "127.0.0.1", metricsPort: Option.some(port) } })
      assert.strictEqual(value(yield* scrapePort(port), "wagate_unassigned_shards"), 300)
      // A table of the cluster's view gone: the reading fails.
      yield* sql(database, (sql) => sql`ALTER TABLE runner_stats RENAME TO runner_stats_away`)
      const unread = yield* scrapePort(port)
      assert.deepStrictEqual(unread.filter((f) => CLUSTER_GAUGES.includes(f.name)).map((f) => f.name), [])
      assert.isAbove(value(unread, "process_resident_memory_bytes"), 0)
      assert.strictEqual(family(unread, "wagate_sends_accepted").type, "COUNTER")
      // The operator's endpoint has no process metrics without the cluster: it answers an error.
      const operator = yield* api.http.get("/ops/v1/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }).pipe(Effect.orDie)
      assert.deepStrictEqual([operator.status, ((yield* operator.json.pipe(Effect.orDie)) as { code?: string }).code], [500, "internal_error"])
      // Back: the next scrape has them again.
      yield* sql(database, (sql) => sql`ALTER TABLE runner_stats_away RENAME TO runner_stats`)
      assert.strictEqual(value(yield* scrapePort(port), "wagate_unassigned_shards"), 300)
    }))

  it.scopedLive("METRICS_PORT serves this process's metrics without a token, and /livez for liveness probes, nothing else", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      yield* Layer.launch(MetricsServer.layer({ host: "127.0.0.1", port })).pipe(Effect.forkScoped)
      const response = yield* eventually(
        Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).catch(() => null)),
        (r) => r !== null,
        10_000
      )
      assert.strictEqual(response!.status, 200)
      const families = parse(yield* Effect.promise(() => response!.text()))
      assert.strictEqual(family(families, "wagate_zombie_restarts").type, "COUNTER")
      assert.isAbove(value(families, "nodejs_heap_size_used_bytes"), 0)
      // A runner's listener: the scrapes of /ops/v1/metrics above leave no cluster-wide gauge in it.
      assert.deepStrictEqual(families.filter((f) => CLUSTER_GAUGES.includes(f.name)).map((f) => f.name), [])
      const other = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/ops/v1/cluster`))
      assert.strictEqual(other.status, 404)
      // The runners' liveness probe.
      const alive = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/livez`).then(async (r) => [r.status, await r.json()]))
      assert.deepStrictEqual(alive, [200, { status: "ok" }])
    }))
})
