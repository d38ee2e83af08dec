/**
 * What an operator follows one request by, on separate processes (one api, one runner, the
 * standalone simulator): the X-Request-Id echoed and carried into the api's JSON log lines of
 * that request, and, with an OTLP/HTTP endpoint configured, one trace across the api and the
 * runner for a send. The collector is a stand-in: an HTTP server in the test that keeps what
 * the processes export to /v1/traces.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { join } from "node:path"
import * as ClusterLoad from "./support/ClusterLoad.js"
import * as ClusterProcesses from "./support/ClusterProcesses.js"

interface ExportedSpan {
  readonly service: string
  readonly traceId: string
  readonly name: string
  readonly attributes: Record<string, unknown>
}

/** An OTLP/HTTP (JSON) traces receiver on a free loopback port, for the scope. */
const collector = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly spans: Array<ExportedSpan>; readonly close: () => void }>((resume) => {
    const spans: Array<ExportedSpan> = []
    const server = createServer((request, response) => {
      let body = ""
      request.on("data", (chunk) => body += chunk)
      request.on("end", () => {
        if (request.url === "/v1/traces") {
          for (const rs of JSON.parse(body).resourceSpans ?? []) {
            const service = rs.resource?.attributes?.find((a: any) => a.key === "service.name")?.value?.stringValue ?? ""
            for (const ss of rs.scopeSpans ?? []) {
              for (const s of ss.spans ?? []) {
                const attributes: Record<string, unknown> = {}
                for (const a of s.attributes ?? []) attributes[a.key] = Object.values(a.value ?? {})[0]
                spans.push({ service, traceId: s.traceId, name: s.name, attributes })
              }
            }
          }
        }
        response.writeHead(200, { "content-type": "application/json" })
        response.end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, spans, close: () => server.close() }))
    })
  }),
  (c) => Effect.sync(c.close)
)

describe("request ids, JSON logs and traces across processes", () => {
  it.live("a send is one trace over the api and the runner; its request id is echoed and in the api's log lines", () =>
    Effect.scoped(Effect.gen(function*() {
      const otlp = yield* collector
      const cluster = yield* ClusterProcesses.start(1, ({ apiUrl, sql }) =>
        Effect.promise(() =>
          ClusterLoad.provision(apiUrl, (accountId, phones) =>
            Effect.runPromise(Effect.orDie(Effect.asVoid(sql`
              INSERT INTO numbers (account_id, phone, status, linked, connected_at)
              SELECT ${accountId}, phone, 'STARTING', true, now() - interval '10 days'
              FROM unnest(${`{${phones.join(",")}}`}::text[]) AS phone`))), 1, 1)
        ), { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, LOG_FORMAT: "json", LOG_LEVEL: "Debug" })
      const [number] = cluster.prepared
      yield* ClusterProcesses.untilTrue(
        Effect.promise(async () => (await ClusterLoad.working(cluster.simUrl, new Set([number.phone]))) === 1),
        120_000,
        "the number WORKING"
      )
      yield* Effect.promise(() => ClusterLoad.inbound(cluster.simUrl, number, "hello"))

      const requestId = `req-${Date.now()}`
      const sent = yield* Effect.promise(async () => {
        const response = await fetch(`${cluster.apiUrl}/api/v1/messages/send`, {
          method: "POST",
          headers: { authorization: `Bearer ${number.key}`, "content-type": "application/json", "x-request-id": requestId },
          body: JSON.stringify({ to: number.peer, text: "traced", from: number.id })
        })
        return { status: response.status, id: response.headers.get("x-request-id"), body: await response.json() }
      })
      assert.deepStrictEqual([sent.status, sent.id], [200, requestId])
      // Without one (or with one that is not printable ASCII) the gateway makes one.
      const generated = yield* Effect.promise(async () =>
        (await fetch(`${cluster.apiUrl}/api/v1/numbers`, { headers: { "x-request-id": "bad id with spaces" } })).headers.get("x-request-id")
      )
      assert.match(generated ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)

      // The api's span of the request carries the id; the runner's spans of the same trace handled it.
      const trace = yield* Effect.gen(function*() {
        const deadline = Date.now() + 60_000
        for (;;) {
          const root = otlp.spans.find((s) => s.service === "wagate-api" && s.attributes["http.request_id"] === requestId)
          const onRunner = root === undefined ? [] : otlp.spans.filter((s) => s.service === "wagate-runner" && s.traceId === root.traceId)
          if (root !== undefined && onRunner.length > 0) return { root, onRunner }
          if (Date.now() > deadline) {
            return yield* Effect.dieMessage(`no trace over both processes; exported: ${
              JSON.stringify([...new Set(otlp.spans.map((s) => `${s.service} ${s.name}`))])
            }`)
          }
          yield* Effect.sleep("500 millis")
        }
      })
      console.log(`[telemetry] trace ${trace.root.traceId}: runner spans ${[...new Set(trace.onRunner.map((s) => s.name))].join(", ")}`)

      // JSON log lines of that request on the api carry its id.
      const lines = readFileSync(join(cluster.logs, "api.log"), "utf8").split("\n").filter((l) => l.startsWith("{"))
      const ofRequest = lines.map((l) => JSON.parse(l)).filter((l) => l.annotations?.request_id === requestId)
      assert.isAbove(ofRequest.length, 0, "the api logged the request as JSON with its request_id")
      assert.strictEqual(ofRequest.at(-1).annotations.path, "/api/v1/messages/send")
      assert.strictEqual(ofRequest.at(-1).annotations.status, 200)
    })), { timeout: 300_000 })
})
