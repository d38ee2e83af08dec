/**
 * The composition root: the infrastructure this process runs on, decided once from
 * configuration, under the gateway of its role.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { BlobStore } from "@wagate/media/BlobStore"
import { config as mediaFetcherConfig, MediaFetcher } from "@wagate/media/MediaFetcher"
import * as Database from "@wagate/store/Database"
import * as BaileysSettings from "@wagate/whatsapp/baileys/BaileysSettings"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { realpathSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { KeyRevocations } from "./auth/KeyRevocations.js"
import { OperatorToken } from "./auth/OperatorToken.js"
import * as Cluster from "./cluster/Cluster.js"
import * as RunnerLiveness from "./cluster/RunnerLiveness.js"
import { Settings, settings as gatewaySettings } from "./Config.js"
import * as Gateway from "./Gateway.js"
import * as DataDir from "./infra/DataDir.js"
import * as DataDirLock from "./infra/DataDirLock.js"
import * as NodeServer from "./http/NodeServer.js"
import * as Prometheus from "./infra/Prometheus.js"
import * as Redis from "./infra/Redis.js"
import { RequestCounter } from "./infra/RequestCounter.js"
import * as Network from "./Network.js"
import * as Shutdown from "./Shutdown.js"
import * as Telemetry from "./infra/Telemetry.js"

/**
 * The gateway's settings, checked at once with those the layers below read for themselves: a bad
 * value ends the start before anything opens, and every bad value is named together, not one
 * group's after another's as each is fixed.
 */
const everySetting = Layer.effect(
  Settings,
  Effect.map(Config.all([gatewaySettings, mediaFetcherConfig, BaileysSettings.config]), ([gateway]) => gateway)
)

export const Main = Layer.unwrapScoped(Effect.gen(function*() {
  const settings = yield* Settings
  yield* DataDir.prepare(settings.dataDir)
  const embedded = Option.isNone(settings.databaseUrl)
  if (embedded && settings.role !== "all") {
    return yield* Effect.dieMessage("The embedded database serves one process: set DATABASE_URL to run api and runner roles")
  }
  // Held until everything below has stopped (this scope closes last).
  if (embedded) yield* DataDirLock.acquire(settings.dataDir)
  if (settings.role !== "runner") yield* NodeServer.checkListen(settings.httpHost, settings.httpPort)
  const gateway = Gateway.layer(settings, {
    database: Option.match(settings.databaseUrl, {
      onNone: () => Database.layerEmbedded({ dataDir: join(settings.dataDir, "pg") }),
      onSome: (url) =>
        Database.layerPostgres({
          url,
          maxConnections: settings.databasePoolSize,
          statementTimeoutMs: settings.databaseStatementTimeoutMs,
          idleInTransactionTimeoutMs: settings.databaseIdleInTransactionTimeoutMs,
          // A runner's sessions carry its address: while one is open, the runner is alive.
          applicationName: Cluster.hostsEntities(settings)
            ? RunnerLiveness.sessionName(`${settings.runnerHost}:${settings.runnerPort}`)
            : undefined
        })
    }),
    cluster: Cluster.layer(settings, embedded ? "embedded" : "postgres"),
    sharedState: Option.match(settings.redisUrl, {
      onNone: () => Layer.mergeAll(RequestCounter.layerMemory, KeyRevocations.layerMemory),
      onSome: (url) =>
        Layer.mergeAll(RequestCounter.layerRedis, KeyRevocations.layerRedis).pipe(
          Layer.provideMerge(Redis.layer(url, settings.redisPrefix))
        )
    }),
    blobs: BlobStore.layerConfig({ dataDir: settings.dataDir, publicBaseUrl: `http://127.0.0.1:${settings.httpPort}` }),
    network: Network.layer(settings),
    fetcher: MediaFetcher.layerConfig,
    httpServer: NodeHttpServer.layer(NodeServer.make(settings), { host: settings.httpHost, port: settings.httpPort })
  })
  const announce = Effect.gen(function*() {
    const token = yield* OperatorToken
    // A runner serves no HTTP: it is reached on its runner port by the cluster.
    const where = settings.role === "runner"
      ? `${settings.runnerHost}:${settings.runnerPort} (the cluster's runner port; no HTTP API)`
      : `http://${settings.httpHost}:${settings.httpPort}`
    yield* Effect.logInfo(`wagate ${settings.role} on ${where}, network: ${settings.waDriver}, operator token: ${token.source}`)
  }).pipe(Effect.provide(OperatorToken.Default), Effect.provideService(Settings, settings))
  // Announced once built: the HTTP server listens and has its routes.
  return Layer.mergeAll(gateway, Shutdown.layer(settings.shutdownTimeoutMs)).pipe(Layer.tap(() => announce))
})).pipe(Layer.provide(everySetting))

/**
 * A promise that fails with nobody waiting for it (a library's stray command, such as ioredis'
 * or Baileys') is logged, and the process goes on: by default Node would stop it, and with it
 * every number it runs.
 */
const logStrayRejections = Effect.gen(function*() {
  const runtime = yield* Effect.runtime<never>()
  const log = (reason: unknown) => {
    Prometheus.strayFailures.inc()
    Runtime.runFork(runtime)(Effect.logError("a promise failed with nobody waiting for it; the process goes on", Cause.die(reason)))
  }
  yield* Effect.acquireRelease(
    Effect.sync(() => process.on("unhandledRejection", log)),
    () => Effect.sync(() => process.off("unhandledRejection", log))
  )
})

/**
 * Node's process warnings (a library's deprecated call, such as pg's "client.query() when the
 * client is already executing a query" from the cluster's lock connection) are logged as every
 * other line, in LOG_FORMAT at WARN, instead of Node's own `(node:PID) ...` text on stderr, which
 * a JSON log pipeline cannot read. Node prints them through its own listener: it is set aside
 * while the process runs and given back at the end.
 */
const logProcessWarnings = Effect.gen(function*() {
  const runtime = yield* Effect.runtime<never>()
  const log = (warning: Error) =>
    Runtime.runFork(runtime)(Effect.logWarning(`node: ${warning.name}: ${warning.message}`))
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      const nodes = process.listeners("warning")
      process.removeAllListeners("warning")
      process.on("warning", log)
      return nodes
    }),
    (nodes) =>
      Effect.sync(() => {
        process.off("warning", log)
        for (const listener of nodes) process.on("warning", listener)
      })
  )
})

/**
 * What an error says, with what it was caused by: a failed statement's `SqlError` says "Failed to
 * execute statement", and PostgreSQL's words are its cause.
 */
const said = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return String(error)
  const own = "message" in error && typeof error.message === "string" && error.message !== ""
    ? error.message
    : "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : String(error)
  const cause = "cause" in error && error.cause !== undefined && error.cause !== error ? said(error.cause) : ""
  return cause === "" || own.includes(cause) ? own : `${own}: ${cause}`
}

/** Every failure and defect of `cause`, each with its causes, on one line. */
const causeSummary = (cause: Cause.Cause<unknown>): string => {
  const reasons = [...Cause.failures(cause), ...Cause.defects(cause)].map(said)
  return reasons.length > 0 ? reasons.join("; ") : Cause.pretty(cause).split("\n")[0]!
}

/**
 * The process's end on an error, logged with what went wrong in the message (the runtime's own
 * report logs the cause alone, with an empty message, which a JSON log shows as `"message":[]`).
 */
const reportEnd = (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError(`stopped on an error: ${causeSummary(cause)}`, cause)

/** Runs a process of `layer` (Main, or Main with a test's hooks) until SIGTERM/SIGINT. */
export const launch = (layer: Layer.Layer<never, unknown>) =>
  NodeRuntime.runMain(
    Effect.gen(function*() {
      // A bad setting of the log itself is reported by the default logger.
      const telemetry = yield* Effect.tapErrorCause(Telemetry.settings, reportEnd)
      return yield* Layer.launch(Layer.mergeAll(Layer.scopedDiscard(logStrayRejections), Layer.scopedDiscard(logProcessWarnings), layer)).pipe(
        // Once every part has stopped (the HTTP server, the entities, the pools).
        Effect.ensuring(Effect.logInfo("stopped")),
        Effect.tapErrorCause(reportEnd),
        // Without an exporter spans would only cost time: each one allocates and captures a stack.
        Effect.withTracerEnabled(Option.isSome(Telemetry.tracesUrl(telemetry))),
        Effect.provide(Telemetry.layer(telemetry))
      )
    }),
    { disablePrettyLogger: true, disableErrorReporting: true }
  )

// Run when started as the program (`npm start`), not when a test's entry point imports Main.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) launch(Main)
