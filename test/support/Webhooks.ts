/**
 * Helpers of the webhook tests: a gateway whose webhooks may reach the loopback receiver, events
 * written into the outbox as the stores write them, and plain HTTP calls for what the typed
 * client hides (statuses, error codes).
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as WagateClient from "@wagate/client/WagateClient"
import { BlobStore } from "@wagate/media/BlobStore"
import { MediaFetcher } from "@wagate/media/MediaFetcher"
import * as Database from "@wagate/store/Database"
import * as Outbox from "@wagate/store/Outbox"
import * as SimNetwork from "@wagate/whatsapp/sim/SimNetwork"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KeyRevocations } from "../../apps/gateway/src/auth/KeyRevocations.js"
import * as Cluster from "../../apps/gateway/src/cluster/Cluster.js"
import { type GatewaySettings, settings } from "../../apps/gateway/src/Config.js"
import * as Gateway from "../../apps/gateway/src/Gateway.js"
import { RequestCounter } from "../../apps/gateway/src/infra/RequestCounter.js"
import {
  type DatabaseContext,
  type GatewayOptions,
  OPERATOR_TOKEN,
  type RunningGateway,
  simulatedNetwork,
  sql,
  startGateway
} from "./TestGateway.js"

/** A gateway that lets webhooks reach loopback, with a short timeout and a fast poll. */
export const webhookGateway = (
  database: DatabaseContext,
  options: Pick<GatewayOptions, "domainClock" | "role" | "sim"> & {
    readonly settings?: Partial<GatewaySettings> | undefined
  } = {}
) =>
  startGateway(database, {
    domainClock: options.domainClock,
    role: options.role,
    sim: options.sim,
    settings: {
      webhookAllowPrivateUrls: true,
      webhookTimeoutMs: 500,
      webhookPollIntervalMs: Option.some(50),
      ...options.settings
    }
  })

/** Events as a number entity writes them: each in a transaction of its own, with its notification. */
export const emit = (database: DatabaseContext, accountId: number, count: number, tag = "e") =>
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    for (let i = 1; i <= count; i++) {
      yield* Outbox.enqueue(pg, accountId, Outbox.envelope("session.status", Date.now(), { status: `${tag}${i}` })).pipe(
        pg.withTransaction
      )
    }
  }).pipe(Effect.provide(database), Effect.orDie)

/** The outbox of an account, oldest first. */
export const outbox = (database: DatabaseContext, accountId: number) =>
  sql(database, (sql) =>
    sql<{
      id: string
      attempts: number
      next_attempt_at: Date | null
      delivered_at: Date | null
      failed_at: Date | null
      last_status: number | null
      payload: any
    }>`SELECT id, attempts, next_attempt_at, delivered_at, failed_at, last_status, payload FROM webhook_outbox
       WHERE account_id = ${accountId} ORDER BY id`)

export { eventually } from "./Fixtures.js"

export interface Answer {
  readonly status: number
  readonly body: any
  readonly headers: Readonly<Record<string, string>>
}

/** A call with an API key (and any other headers), answering status, JSON body and headers. */
export const call = (
  gateway: RunningGateway,
  method: "GET" | "PUT" | "POST",
  path: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {}
): Effect.Effect<Answer> =>
  Effect.gen(function*() {
    const request = HttpClientRequest.make(method)(path).pipe(
      HttpClientRequest.setHeaders({ ...headers, authorization: `Bearer ${key}` }),
      body === undefined ? (r) => r : HttpClientRequest.bodyUnsafeJson(body)
    )
    const response = yield* gateway.http.execute(request)
    return { status: response.status, body: yield* response.json, headers: response.headers }
  }).pipe(Effect.orDie)

export const code = (a: Answer) => `${a.status} ${a.body?.code ?? "ok"}`

/**
 * A gateway on the embedded database (PGlite, one connection, one process), as `npm start`
 * runs it: webhooks are woken by polling only there.
 */
export const embeddedGateway = (options: Pick<GatewayOptions, "domainClock"> = {}) => Effect.gen(function*() {
  const base = yield* settings
  const gatewaySettings: GatewaySettings = {
    ...base,
    role: "all",
    dataDir: mkdtempSync(join(tmpdir(), "wagate-test-")),
    operatorToken: Option.some(Redacted.make(OPERATOR_TOKEN)),
    waDriver: "simulator",
    redisUrl: Option.none(),
    databaseUrl: Option.none(),
    webhookAllowPrivateUrls: true,
    webhookTimeoutMs: 500
  }
  const database = yield* Layer.build(Database.layerEmbeddedTest)
  const httpServer = yield* Layer.build(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
  const network = yield* simulatedNetwork
  yield* Layer.build(Gateway.layer(gatewaySettings, {
    database: Layer.succeedContext(database),
    cluster: Cluster.layer(gatewaySettings, "embedded"),
    sharedState: Layer.mergeAll(RequestCounter.layerMemory, KeyRevocations.layerMemory),
    blobs: BlobStore.layerMemory({ publicBaseUrl: "http://127.0.0.1", signingSecret: Redacted.make("s".repeat(32)) }),
    network: Layer.succeedContext(network),
    domainClock: options.domainClock,
    fetcher: MediaFetcher.layer({ allowPrivateAddresses: true }),
    httpServer: Layer.succeedContext(httpServer)
  }))
  const url = `http://127.0.0.1:${(Context.get(httpServer, HttpServer.HttpServer).address as HttpServer.TcpAddress).port}`
  const clientContext = yield* Layer.build(NodeHttpClient.layerUndici)
  const client = Context.get(clientContext, HttpClient.HttpClient)
  const running: RunningGateway = {
    url,
    ops: yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN }).pipe(Effect.provide(clientContext)),
    http: client.pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl(url))),
    sim: Context.get(network, SimNetwork.SimNetwork),
    database,
    client: (apiKey, scheme) => WagateClient.make({ baseUrl: url, apiKey, scheme }).pipe(Effect.provide(clientContext))
  }
  return running
})
