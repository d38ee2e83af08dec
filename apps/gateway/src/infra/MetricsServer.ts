/**
 * `GET /metrics` on `METRICS_PORT`, without a token, for Prometheus to scrape each process: a
 * runner serves no other HTTP, and its entities' counters (acks, incoming messages, zombie
 * restarts, request defects) live in its own memory. Keep the port on the cluster's internal
 * network; the api's `/ops/v1/metrics` (operator token) adds the cluster-wide gauges.
 *
 * `GET /livez` answers from the process's event loop, for a runner's liveness probe: a runner
 * whose event loop is stuck still has the kernel accept connections on its runner port, so a TCP
 * probe there never sees it, and its numbers would stay down (it keeps its shard locks while
 * its database sessions live).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import * as Prometheus from "./Prometheus.js"

export const layer = (options: { readonly host: string; readonly port: number }) =>
  Layer.scopedDiscard(Effect.gen(function*() {
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
      Prometheus.snapshot().then(
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
  }))
