/**
 * `GET /metrics` on `METRICS_PORT`, without a token, for Prometheus to scrape each process: a
 * runner serves no other HTTP, and its entities' counters (acks, incoming messages, zombie
 * restarts, request defects) live in its own memory. Keep the port on the cluster's internal
 * network. An api (or all) process adds the cluster-wide gauges, from a reading of PostgreSQL
 * made for each scrape, as its `/ops/v1/metrics` does; a runner leaves them out (every runner
 * would read the same from the database, and none of them serves the operator's view).
 *
 * `GET /livez` answers from the process's event loop, for a runner's liveness probe: a runner
 * whose event loop is stuck still has the kernel accept connections on its runner port, so a TCP
 * probe there never sees it, and its numbers would stay down (it keeps its shard locks while
 * its database sessions live).
 */
import type { ClusterView as View } from "@wagate/domain/ClusterView"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { createServer } from "node:http"
import { ClusterView } from "../ops/ClusterView.js"
import * as Prometheus from "./Prometheus.js"

interface Listen {
  readonly host: string
  readonly port: number
}

/** How long a scrape waits for the cluster's reading before it answers without the cluster-wide gauges. */
const CLUSTER_READ_TIMEOUT = "5 seconds"

const serve = (options: Listen, cluster: Option.Option<Effect.Effect<typeof View.Type>>) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    // A database that cannot be read leaves the cluster-wide gauges out (and says why in the log),
    // and the process's own metrics are still served: they are what tells what the process is doing.
    const reading: Effect.Effect<typeof View.Type | undefined> = Option.match(cluster, {
      onNone: () => Effect.succeed(undefined),
      onSome: (read) =>
        read.pipe(
          Effect.timeoutFail({ duration: CLUSTER_READ_TIMEOUT, onTimeout: () => `no answer within ${CLUSTER_READ_TIMEOUT}` }),
          Effect.sandbox,
          Effect.catchAll((cause) =>
            Effect.as(Effect.logWarning("metrics served without the cluster-wide gauges: the cluster could not be read", cause), undefined)
          )
        )
    })
    const metrics = reading.pipe(Effect.flatMap((view) => Effect.tryPromise(() => Prometheus.snapshot(view))))
    const server = createServer((request, response) => {
      const path = (request.url ?? "").split("?")[0]
      if (request.method === "GET" && path === "/livez") {
        response.writeHead(200, { "content-type": "application/json" })
        return response.end(JSON.stringify({ status: "ok" }))
      }
      if (request.method !== "GET" || path !== "/metrics") {
        response.writeHead(404, { "content-type": "application/json" })
        return response.end(JSON.stringify({ error: "Only GET /metrics and GET /livez are served here", code: "not_found" }))
      }
      Runtime.runPromise(runtime)(metrics).then(
        (text) => {
          response.writeHead(200, { "content-type": Prometheus.contentType })
          response.end(text)
        },
        () => {
          response.writeHead(503, { "content-type": "application/json" })
          response.end(JSON.stringify({ error: "Metrics could not be collected", code: "capacity" }))
        }
      )
    })
    yield* Effect.acquireRelease(
      Effect.async<void, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(options.port, options.host, () => {
          resume(Effect.void)
        })
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
    ).pipe(Effect.orDie)
    yield* Effect.logInfo(`metrics on http://${options.host}:${options.port}/metrics`)
  })

/** A runner's listener: the process's own metrics. */
export const layer = (options: Listen) => Layer.scopedDiscard(serve(options, Option.none()))

/** An api (or all) process's listener: its own metrics and the cluster-wide gauges, read at each scrape. */
export const layerWithCluster = (options: Listen) =>
  Layer.scopedDiscard(Effect.flatMap(ClusterView, (view) => serve(options, Option.some(view.read)))).pipe(
    Layer.provide(ClusterView.Default)
  )
