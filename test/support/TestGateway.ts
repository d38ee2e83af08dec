/**
 * A whole gateway for tests: the real HTTP server on a free loopback port, a fresh PostgreSQL
 * database, Redis when asked for (or the in-memory stand-ins), and typed clients pointed at it.
 * Several gateways can share one database and one Redis, as several api processes do.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as SqlClient from "@effect/sql/SqlClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as WagateClient from "@wagate/client/WagateClient"
import { BlobStore } from "@wagate/media/BlobStore"
import { MediaFetcher, type Options as MediaFetcherOptions } from "@wagate/media/MediaFetcher"
import { type Hooks, NumberHooks } from "@wagate/numbers/NumberHooks"
import * as Database from "@wagate/store/Database"
import * as SimNetwork from "@wagate/whatsapp/sim/SimNetwork"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import type { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as DefaultServices from "effect/DefaultServices"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KeyRevocations } from "../../apps/gateway/src/auth/KeyRevocations.js"
import * as Cluster from "../../apps/gateway/src/cluster/Cluster.js"
import { type GatewaySettings, settings } from "../../apps/gateway/src/Config.js"
import * as Gateway from "../../apps/gateway/src/Gateway.js"
import * as NodeServer from "../../apps/gateway/src/http/NodeServer.js"
import * as Redis from "../../apps/gateway/src/infra/Redis.js"
import { RequestCounter } from "../../apps/gateway/src/infra/RequestCounter.js"
import { freePort } from "./Ports.js"

export const OPERATOR_TOKEN = "wag_op_test_operator_token"
/** The key that seals webhook secrets in every test gateway (and test process) sharing a database. */
export const WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString("base64")
export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379"

export type DatabaseContext = Context.Context<Database.Database>

/** A fresh, migrated PostgreSQL database for the scope. */
export const freshDatabase: Effect.Effect<DatabaseContext, unknown, Scope.Scope> = Layer.build(Database.layerTest)

/** Statements of the test itself on the database (fixtures, reads of what the gateway stored). */
export const sql = <A>(database: DatabaseContext, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.orDie(Effect.provide(Effect.flatMap(SqlClient.SqlClient, f), database))

export interface GatewayOptions {
  /** Shared state through Redis under this key prefix (several gateways: the same prefix). */
  readonly redisPrefix?: string | undefined
  /** all (default): serves HTTP and hosts entities; api: HTTP only, a cluster client. */
  readonly role?: "all" | "api" | undefined
  readonly settings?: Partial<GatewaySettings> | undefined
  /** The clock of the per-minute request counters; real time by default. */
  readonly counterClock?: Clock.Clock | undefined
  /** Settings of the attachment fetcher (loopback URLs are always allowed in tests). */
  readonly fetcher?: MediaFetcherOptions | undefined
  /** The clock of the number entities (days, pauses, suspensions); real time by default. */
  readonly domainClock?: Clock.Clock | undefined
  /** The simulated network; by default a fresh one of its own, linking at once. */
  readonly sim?: Context.Context<SimNetwork.SimNetwork | WhatsAppDriver> | undefined
  /** Hooks inside the number entities (a defect at a chosen moment); none by default. */
  readonly numberHooks?: Hooks | undefined
  /** The blob store, given the gateway's address (links point there); in memory by default. */
  readonly blobs?: ((publicBaseUrl: string) => Layer.Layer<BlobStore, unknown>) | undefined
}

export interface RunningGateway {
  readonly url: string
  readonly ops: OpsClient.Client
  /** The typed API client with a key (or none). */
  readonly client: (apiKey?: string, scheme?: "bearer" | "x-api-key") => Effect.Effect<WagateClient.Client>
  /** A plain HTTP client that prefixes the gateway's address, for what the typed client hides. */
  readonly http: HttpClient.HttpClient
  /** The simulated WhatsApp network the gateway talks to. */
  readonly sim: SimNetwork.SimNetworkService
  readonly database: DatabaseContext
}

/** A gateway started by `startGateway`, with the (in-memory) blob store it keeps files in. */
export interface GatewayWithBlobs extends RunningGateway {
  readonly blobs: Context.Tag.Service<BlobStore>
}

/** A simulated network for the scope, linking numbers at once. */
export const simulatedNetwork = Layer.build(SimulatorDriver.layerTest({ scanDelayMs: 0 }))


/** Starts a gateway on the given database for the scope. */
export const startGateway = (database: DatabaseContext, options: GatewayOptions = {}) =>
  Effect.gen(function*() {
    const dataDir = mkdtempSync(join(tmpdir(), "wagate-test-"))
    const redisUrl = options.redisPrefix === undefined
      ? Option.none()
      : options.settings?.redisUrl ?? Option.some(Redacted.make(REDIS_URL))
    const base = yield* settings
    const gatewaySettings: GatewaySettings = {
      ...base,
      role: options.role ?? "all",
      dataDir,
      operatorToken: Option.some(Redacted.make(OPERATOR_TOKEN)),
      webhookSecretKey: Option.some(Redacted.make(WEBHOOK_SECRET_KEY)),
      runnerHost: "127.0.0.1",
      runnerListenHost: "127.0.0.1",
      runnerPort: yield* freePort,
      waDriver: "simulator",
      ...options.settings,
      redisUrl
    }
    const httpServer = yield* Layer.build(NodeHttpServer.layer(NodeServer.make(gatewaySettings), { host: "127.0.0.1", port: 0 }))
    const network = options.sim ?? (yield* simulatedNetwork)
    const publicBaseUrl = `http://127.0.0.1:${(Context.get(httpServer, HttpServer.HttpServer).address as HttpServer.TcpAddress).port}`
    const blobs = yield* Layer.build(
      options.blobs === undefined
        ? BlobStore.layerMemory({ publicBaseUrl: "http://127.0.0.1", signingSecret: Redacted.make("s".repeat(32)) })
        : options.blobs(publicBaseUrl)
    )
    const hooks = options.numberHooks === undefined ? Layer.empty : Layer.succeed(NumberHooks, options.numberHooks)
    yield* Layer.build(Layer.provide(Gateway.layer(gatewaySettings, {
      database: Layer.succeedContext(database),
      cluster: Cluster.layer(gatewaySettings, "postgres"),
      sharedState: (Option.isNone(redisUrl)
        ? Layer.mergeAll(RequestCounter.layerMemory, KeyRevocations.layerMemory)
        : Layer.mergeAll(RequestCounter.layerRedis, KeyRevocations.layerRedis).pipe(
          Layer.provideMerge(Redis.layer(redisUrl.value, options.redisPrefix!))
        )).pipe(
          options.counterClock === undefined
            ? (l) => l
            : (l) => Layer.locallyWith(l, DefaultServices.currentServices, Context.add(Clock.Clock, options.counterClock!))
        ),
      blobs: Layer.succeedContext(blobs),
      network: Layer.succeedContext(network),
      domainClock: options.domainClock,
      fetcher: MediaFetcher.layer({ timeout: "5 seconds", ...options.fetcher, allowPrivateAddresses: true }),
      httpServer: Layer.succeedContext(httpServer)
    }), hooks))
    const server = Context.get(httpServer, HttpServer.HttpServer)
    const address = server.address as HttpServer.TcpAddress
    const url = `http://127.0.0.1:${address.port}`
    // The client lives as long as the caller's scope, like the server.
    const clientContext = yield* Layer.build(NodeHttpClient.layerUndici)
    const client = Context.get(clientContext, HttpClient.HttpClient)
    const ops = yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN }).pipe(Effect.provide(clientContext))
    const running: GatewayWithBlobs = {
      url,
      ops,
      http: client.pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl(url))),
      sim: Context.get(network, SimNetwork.SimNetwork),
      blobs: Context.get(blobs, BlobStore),
      database,
      client: (apiKey, scheme) => WagateClient.make({ baseUrl: url, apiKey, scheme }).pipe(Effect.provide(clientContext))
    }
    return running
  })

/**
 * Runs `start` (a gateway) in a scope of its own, answering what it started with `stop`, which
 * closes that scope: the gateway stops there, as a process stops before a restart, and the next
 * one can start on the same database. The test's scope closes it at the latest, should the test
 * end before `stop`.
 */
export const stoppable = <A extends object, E, R>(
  start: Effect.Effect<A, E, R>
): Effect.Effect<A & { readonly stop: Effect.Effect<void> }, E, Exclude<R, Scope.Scope> | Scope.Scope> =>
  Effect.gen(function*() {
    const own = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const started = yield* Scope.extend(start, own)
    return { ...started, stop: Scope.close(own, Exit.void) }
  })

/** A unique prefix for Redis keys of one suite. */
export const redisPrefix = () => `wagate-test-${randomBytes(4).toString("hex")}`

/** The suite's gateway as a service, for `layer(TestGateway.layer())`. */
export class TestGateway extends Context.Tag("test/TestGateway")<TestGateway, GatewayWithBlobs>() {
  static readonly layer = (options: GatewayOptions = {}) =>
    Layer.scoped(
      TestGateway,
      Effect.flatMap(freshDatabase, (database) => startGateway(database, options)).pipe(Effect.orDie)
    )
}
