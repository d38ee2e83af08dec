/**
 * The gateway of one process, given its infrastructure: the HTTP surface when the role serves
 * it, the number and account entities when the role hosts them, and the stores both use.
 * `main.ts` chooses the infrastructure from configuration; tests choose their own.
 */
import type { Sharding } from "@effect/cluster/Sharding"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServer from "@effect/platform/HttpServer"
import type { BlobStore } from "@wagate/media/BlobStore"
import type { MediaFetcher } from "@wagate/media/MediaFetcher"
import { ExportJanitor } from "@wagate/exports/ExportJanitor"
import { ExportLive } from "@wagate/exports/ExportLive"
import { ExportRecords } from "@wagate/exports/ExportRecords"
import { ExportSettings } from "@wagate/exports/ExportSettings"
import { HistoryRows } from "@wagate/exports/HistoryRows"
import { ExportEvents } from "@wagate/store/ExportEvents"
import { AccountLive } from "@wagate/numbers/AccountLive"
import { DomainClock } from "@wagate/domain/DomainClock"
import { IncomingDownloadSlots, IncomingMediaSettings } from "@wagate/numbers/IncomingMedia"
import { NumberLive } from "@wagate/numbers/NumberLive"
import { NumberSupervisor } from "@wagate/numbers/NumberSupervisor"
import { RunningNumbers } from "@wagate/numbers/RunningNumbers"
import { Accounting } from "@wagate/numbers/billing/Accounting"
import * as DrawdownSingleton from "@wagate/numbers/billing/DrawdownSingleton"
import { PaymentProviders } from "@wagate/numbers/billing/PaymentProvider"
import * as TestPayments from "@wagate/numbers/billing/TestPayments"
import { Accounts } from "@wagate/store/Accounts"
import { Billing } from "@wagate/store/Billing"
import { CabinetUsers } from "@wagate/store/CabinetUsers"
import { ApiKeys } from "@wagate/store/ApiKeys"
import { Conversations } from "@wagate/store/Conversations"
import type * as Database from "@wagate/store/Database"
import { MediaFiles } from "@wagate/store/MediaFiles"
import { Messages } from "@wagate/store/Messages"
import { NumberStates } from "@wagate/store/NumberStates"
import { WebhookConfig } from "@wagate/webhooks/WebhookConfig"
import { WebhookDispatcher } from "@wagate/webhooks/WebhookDispatcher"
import { WebhookLive } from "@wagate/webhooks/WebhookLive"
import { WebhookLog } from "@wagate/webhooks/WebhookLog"
import { WebhookStore } from "@wagate/webhooks/WebhookStore"
import type { WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { KeyRevocations } from "./auth/KeyRevocations.js"
import { OperatorToken } from "./auth/OperatorToken.js"
import { hostsEntities } from "./cluster/Cluster.js"
import { NumberWaker } from "./cluster/NumberWaker.js"
import { RunnerLiveness } from "./cluster/RunnerLiveness.js"
import { RunnerStats } from "./cluster/RunnerStats.js"
import { type GatewaySettings, Settings } from "./Config.js"
import { Health } from "./Health.js"
import { HttpLive } from "./http/Server.js"
import * as ClusterUpkeep from "./ClusterUpkeep.js"
import * as IdempotencyUpkeep from "./IdempotencyUpkeep.js"
import * as MediaUpkeep from "./MediaUpkeep.js"
import * as MessageUpkeep from "./MessageUpkeep.js"
import * as WebhookLogUpkeep from "./WebhookLogUpkeep.js"
import * as MetricsServer from "./infra/MetricsServer.js"
import * as WebhookKeys from "./infra/WebhookKeys.js"
import type { RequestCounter } from "./infra/RequestCounter.js"

/** What a process runs on; each is a choice of main.ts (or of a test). */
export interface Infrastructure<E = unknown> {
  readonly database: Layer.Layer<Database.Database, E>
  readonly cluster: Layer.Layer<Sharding, E, Database.Database>
  readonly sharedState: Layer.Layer<RequestCounter | KeyRevocations, E>
  readonly blobs: Layer.Layer<BlobStore, E>
  /** May use the database (the Baileys driver keeps each number's auth state there). */
  readonly network: Layer.Layer<WhatsAppDriver, E, Database.Database>
  readonly fetcher: Layer.Layer<MediaFetcher, E>
  readonly httpServer: Layer.Layer<HttpServer.HttpServer | HttpRouter.HttpRouter.DefaultServices, E>
  /** The clock the entities keep days, pauses and windows by; the system's unless a test drives it. */
  readonly domainClock?: Clock.Clock | undefined
}

export const Stores = Layer.mergeAll(
  Accounts.Default,
  Billing.Default.pipe(Layer.provide(Accounts.Default)),
  ApiKeys.Default,
  Messages.Default,
  MediaFiles.Default,
  Conversations.Default,
  NumberStates.Default,
  WebhookStore.Default,
  WebhookLog.Default,
  CabinetUsers.Default
)

const webhookConfig = (settings: GatewaySettings) =>
  WebhookConfig.layer({
    allowPrivateUrls: settings.webhookAllowPrivateUrls,
    timeout: Duration.millis(settings.webhookTimeoutMs),
    pollInterval: Option.getOrUndefined(Option.map(settings.webhookPollIntervalMs, Duration.millis)),
    listen: settings.webhookListen
  })

/** Archive exports: their entities and background job, on processes that host entities. */
const exportEntities = (settings: GatewaySettings) =>
  Layer.mergeAll(ExportLive, ExportJanitor).pipe(
    Layer.provide([ExportRecords.Default, HistoryRows.Default, ExportEvents.Default]),
    Layer.provide(Layer.succeed(ExportSettings, {
      messageRetentionDays: settings.messageRetentionDays,
      janitorIntervalMs: settings.exportJanitorIntervalMs
    }))
  )

export const layer = (settings: GatewaySettings, infra: Infrastructure) => {
  const domainClock = infra.domainClock === undefined ? Layer.empty : Layer.succeed(DomainClock, infra.domainClock)
  // Money: the ledger and the numbers' pauses, on the domain clock (the drawdown's days).
  const accounting = Accounting.Default.pipe(Layer.provide(domainClock))
  const payments = PaymentProviders.layer(
    Option.isSome(settings.paymentsTestSecret) ? [TestPayments.make(settings.paymentsTestSecret.value)] : []
  )
  const entities = hostsEntities(settings)
    ? Layer.mergeAll(
      NumberLive,
      AccountLive,
      NumberSupervisor,
      NumberWaker,
      RunnerLiveness,
      RunnerStats,
      WebhookLive,
      WebhookDispatcher,
      MediaUpkeep.layer(settings.mediaUpkeepIntervalMs),
      IdempotencyUpkeep.layer,
      MessageUpkeep.layer(settings.messageRetentionDays),
      ClusterUpkeep.layer,
      WebhookLogUpkeep.layer(settings.webhookLogRetentionDays),
      exportEntities(settings),
      DrawdownSingleton.layer({ tick: Duration.millis(settings.billingTickMs) })
    ).pipe(
      Layer.provide(infra.fetcher),
      // Incoming files go into the same store the HTTP surface reads (one store: the same layer).
      Layer.provide(infra.blobs),
      Layer.provide(Layer.succeed(IncomingDownloadSlots, Effect.unsafeMakeSemaphore(settings.incomingMediaProcessDownloads))),
      Layer.provide(Layer.succeed(IncomingMediaSettings, {
        maxBytes: settings.incomingMediaMaxBytes,
        concurrency: settings.incomingMediaConcurrency
      })),
      Layer.provide(webhookConfig(settings)),
      Layer.provide(domainClock)
    )
    : Layer.empty
  const http = settings.role === "runner"
    ? Layer.empty
    : HttpLive.pipe(
      Layer.provide([Health.Default, OperatorToken.Default, payments]),
      Layer.provide([infra.blobs, infra.sharedState, domainClock]),
      Layer.provideMerge(infra.httpServer)
    )
  // METRICS_PORT: an api (or all) process adds the cluster-wide gauges, read from the database
  // at each scrape; a runner's listener needs nothing and opens at once.
  const metricsOn = <R>(listener: (options: { host: string; port: number }) => Layer.Layer<never, never, R>) =>
    Option.match(settings.metricsPort, {
      onNone: (): Layer.Layer<never, never, R> => Layer.empty,
      onSome: (port) => listener({ host: settings.metricsHost, port })
    })
  const apiMetrics = settings.role === "runner" ? Layer.empty : metricsOn(MetricsServer.layerWithCluster)
  const runnerMetrics = settings.role === "runner" ? metricsOn(MetricsServer.layer) : Layer.empty
  return Layer.mergeAll(http, entities, apiMetrics).pipe(
    // One registry of the process's number entities: its supervisor's, and the sends of its
    // HTTP and MCP surfaces, which call the entities running here directly.
    Layer.provide(RunningNumbers.Default),
    Layer.provide(accounting),
    // One network for the entities and, with the simulator, its control surface.
    Layer.provide(infra.network),
    Layer.provide(infra.cluster),
    Layer.provide(Stores),
    // The migrations seal secrets written before encryption at rest with the same key.
    Layer.provideMerge(infra.database),
    Layer.provideMerge(WebhookKeys.layer(settings)),
    Layer.provide(Layer.succeed(Settings, settings)),
    Layer.merge(runnerMetrics)
  )
}
