/**
 * Every setting of the gateway, read once through `Config` (environment variables by default).
 */
import * as HostCheck from "@wagate/mcp/HostCheck"
import * as IncomingMedia from "@wagate/numbers/IncomingMedia"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { atLeast, integerWithin, milliseconds, secretUrl, tcpPort } from "./SettingBounds.js"

export interface GatewaySettings {
  /** api: HTTP only, reaches entities as a cluster client; runner: entities only; all: both. */
  readonly role: "all" | "api" | "runner"
  readonly httpHost: string
  readonly httpPort: number
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  /** Connections of this process's PostgreSQL pool (with DATABASE_URL). */
  readonly databasePoolSize: number
  /** The longest a statement on PostgreSQL runs, in milliseconds (migrations aside); 0: no bound of the gateway's. */
  readonly databaseStatementTimeoutMs: number
  /** The longest a transaction on PostgreSQL stays open without a statement, in milliseconds; 0: no bound of the gateway's. */
  readonly databaseIdleInTransactionTimeoutMs: number
  readonly redisUrl: Option.Option<Redacted.Redacted>
  /** Prefix of every Redis key and channel, so several gateways can share one Redis. */
  readonly redisPrefix: string
  readonly operatorToken: Option.Option<Redacted.Redacted>
  readonly messageRetentionDays: number
  readonly maxBodyBytes: number
  /** Longest time to receive a whole request (headers and body), in milliseconds. */
  readonly requestTimeoutMs: number
  /** Longest time a graceful stop waits for requests in progress before it closes their connections. */
  readonly drainTimeoutMs: number
  /** Longest time to receive a request's headers, in milliseconds. */
  readonly headersTimeoutMs: number
  /** Take the client address from X-Forwarded-For (only behind a trusted proxy). */
  readonly trustProxy: boolean
  /** The WhatsApp network: the real one (Baileys) or the simulator. */
  readonly waDriver: "baileys" | "simulator"
  /** The standalone simulator every runner shares (`npm run simulator`); none: one in this process. */
  readonly waSimUrl: Option.Option<string>
  /** Address other cluster nodes reach this runner at. */
  readonly runnerHost: string
  readonly runnerPort: number
  readonly runnerListenHost: string
  /** Runners registered before any takes a shard at a cold start (apps/gateway/src/cluster/StartGate.ts). */
  readonly clusterMinRunners: number
  /** Longest wait for them, in milliseconds; then the runners registered start without the others. */
  readonly clusterStartWaitMs: number
  /** How long an HTTP request waits for a number's entity before answering 503 capacity. */
  readonly entityTimeoutMs: number
  /** After SIGTERM/SIGINT the process exits within this many milliseconds, stuck or not. */
  readonly shutdownTimeoutMs: number
  /** Let webhook URLs reach loopback and private addresses (tests, closed networks). */
  readonly webhookAllowPrivateUrls: boolean
  /** The key that seals webhook secrets at rest; none: `DATA_DIR/webhook-secret-key`. */
  readonly webhookSecretKey: Option.Option<Redacted.Redacted>
  /** Older keys that still open webhook secrets sealed before a key rotation. */
  readonly webhookSecretKeysOld: ReadonlyArray<Redacted.Redacted>
  /** How long a webhook receiver has to answer. */
  readonly webhookTimeoutMs: number
  /** How often due webhook events are looked for; unset: 1 s on PostgreSQL, 250 ms embedded. */
  readonly webhookPollIntervalMs: Option.Option<number>
  /** Wake webhook entities through PostgreSQL LISTEN/NOTIFY (false: poll only). */
  readonly webhookListen: boolean
  /** Delivered and failed webhook events (and notices) older than this many days are deleted; 0: kept for ever. */
  readonly webhookLogRetentionDays: number
  /** Incoming files larger than this are not stored (the message is, with the file skipped). */
  readonly incomingMediaMaxBytes: number
  /** Incoming files downloaded at once per number. */
  readonly incomingMediaConcurrency: number
  readonly mediaUpkeepIntervalMs: number
  readonly incomingMediaProcessDownloads: number
  /** How often expired archives are deleted and unfinished exports handed to their entity again. */
  readonly exportJanitorIntervalMs: number
  /** Host names the MCP tool server answers for (Host and Origin headers); `*`: any. */
  readonly mcpAllowedHosts: ReadonlyArray<string>
  /** How often the drawdown looks whether the Almaty day has moved on. */
  readonly billingTickMs: number
  /** Secret of the test payment provider; unset: the provider is off. */
  readonly paymentsTestSecret: Option.Option<Redacted.Redacted>
  /** Where this process serves its own metrics without a token (`GET /metrics`); none when unset. */
  readonly metricsPort: Option.Option<number>
  readonly metricsHost: string
  /** The SMTP server cabinet mail (email confirmation, password reset) goes through; unset: the log. */
  readonly smtpUrl: Option.Option<Redacted.Redacted>
  readonly mailFrom: string
  /** The address customers reach the gateway at, for links in mail; unset: http://localhost:HTTP_PORT. */
  readonly publicUrl: Option.Option<string>
}

export const settings: Config.Config<GatewaySettings> = Config.all({
  role: Config.literal("all", "api", "runner")("WAGATE_ROLE").pipe(
    Config.withDefault("all" as const),
    Config.withDescription("Process role: all (api + runner, default), api, or runner")
  ),
  httpHost: Config.string("HTTP_HOST").pipe(Config.withDefault("0.0.0.0")),
  httpPort: tcpPort("HTTP_PORT").pipe(
    Config.withDefault(3000),
    Config.withDescription("HTTP port (not PORT: the cluster runner reads that one)")
  ),
  dataDir: Config.string("DATA_DIR").pipe(
    Config.withDefault("./data"),
    Config.withDescription("Embedded database, files and the generated operator token")
  ),
  databaseUrl: Config.option(secretUrl("DATABASE_URL", ["postgres:", "postgresql:"], "postgres://user:password@host:5432/db")),
  // A runner keeps one connection for its shard locks for good.
  databasePoolSize: atLeast("DATABASE_POOL_SIZE", 2).pipe(
    Config.withDefault(10),
    Config.withDescription("Connections of the PostgreSQL pool of each process (with DATABASE_URL)")
  ),
  databaseStatementTimeoutMs: milliseconds("DATABASE_STATEMENT_TIMEOUT_MS", 0).pipe(
    Config.withDefault(30_000),
    Config.withDescription(
      "Longest a statement on PostgreSQL runs, in milliseconds (its request answers 503 capacity after it); 0: no bound"
    )
  ),
  databaseIdleInTransactionTimeoutMs: milliseconds("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 0).pipe(
    Config.withDefault(60_000),
    Config.withDescription(
      "Longest a transaction on PostgreSQL stays open without a statement, in milliseconds (then the server ends its session, which rolls it back and frees its locks); 0: no bound"
    )
  ),
  redisUrl: Config.option(secretUrl("REDIS_URL", ["redis:", "rediss:"], "redis://:password@host:6379")),
  redisPrefix: Config.string("REDIS_PREFIX").pipe(Config.withDefault("wagate")),
  operatorToken: Config.option(Config.redacted("OPERATOR_TOKEN")),
  // 0 keeps every message; past 100 years a cut-off would be before any date there is.
  messageRetentionDays: integerWithin(
    "MESSAGE_RETENTION_DAYS",
    0,
    36_500,
    "MESSAGE_RETENTION_DAYS must be from 0 (keep every message) to 36500"
  ).pipe(
    Config.withDefault(365),
    Config.withDescription("Messages older than this are not returned; 0 returns them all")
  ),
  maxBodyBytes: atLeast("MAX_BODY_BYTES", 1).pipe(Config.withDefault(1024 * 1024)),
  requestTimeoutMs: milliseconds("HTTP_REQUEST_TIMEOUT_MS").pipe(
    Config.withDefault(30_000),
    Config.withDescription("Longest time to receive a whole request, headers and body (408 after it)")
  ),
  drainTimeoutMs: milliseconds("HTTP_DRAIN_TIMEOUT_MS", 0).pipe(
    Config.withDefault(10_000),
    Config.withDescription(
      "Longest wait of a graceful stop for requests in progress (a slow download), in milliseconds; then their connections close"
    )
  ),
  headersTimeoutMs: milliseconds("HTTP_HEADERS_TIMEOUT_MS").pipe(
    Config.withDefault(10_000),
    Config.withDescription("Longest time to receive a request's headers (408 after it)")
  ),
  trustProxy: Config.boolean("TRUST_PROXY").pipe(Config.withDefault(false)),
  waDriver: Config.literal("baileys", "simulator")("WA_DRIVER").pipe(
    Config.withDefault("baileys" as const),
    Config.withDescription("baileys (real WhatsApp, default) or simulator (demos and tests)")
  ),
  waSimUrl: Config.option(Config.string("WA_SIM_URL").pipe(
    Config.withDescription("With WA_DRIVER=simulator: the standalone simulator's URL (several processes share it)")
  )),
  runnerHost: Config.string("RUNNER_HOST").pipe(
    Config.withDefault("127.0.0.1"),
    Config.withDescription("Host other cluster nodes reach this runner at")
  ),
  runnerPort: tcpPort("RUNNER_PORT").pipe(Config.withDefault(34431)),
  runnerListenHost: Config.string("RUNNER_LISTEN_HOST").pipe(Config.withDefault("0.0.0.0")),
  clusterMinRunners: atLeast("CLUSTER_MIN_RUNNERS", 1).pipe(
    Config.withDefault(1),
    Config.withDescription("Runners registered before any takes a shard at a cold start (set it to the runner count)")
  ),
  clusterStartWaitMs: milliseconds("CLUSTER_START_WAIT_MS", 0).pipe(
    Config.withDefault(30_000),
    Config.withDescription("Longest wait for CLUSTER_MIN_RUNNERS at a cold start, in milliseconds; then the runners up start")
  ),
  shutdownTimeoutMs: milliseconds("SHUTDOWN_TIMEOUT_MS").pipe(
    Config.withDefault(30_000),
    Config.withDescription("Longest graceful stop after SIGTERM/SIGINT, in milliseconds; then the process exits")
  ),
  entityTimeoutMs: milliseconds("ENTITY_TIMEOUT_MS").pipe(
    Config.withDefault(15_000),
    Config.withDescription("Longest wait for a number's entity (a send with an attachment: six times this)")
  ),
  webhookAllowPrivateUrls: Config.boolean("WEBHOOK_ALLOW_PRIVATE_URLS").pipe(
    Config.withDefault(false),
    Config.withDescription("Let webhook URLs reach loopback and private addresses (never on a public gateway)")
  ),
  webhookSecretKey: Config.option(Config.redacted("WEBHOOK_SECRET_KEY").pipe(
    Config.withDescription("32 bytes, base64 or hex, that seal webhook secrets at rest (default: DATA_DIR/webhook-secret-key)")
  )),
  webhookSecretKeysOld: Config.array(Config.redacted(), "WEBHOOK_SECRET_KEYS_OLD").pipe(
    Config.withDefault([]),
    Config.withDescription("Earlier WEBHOOK_SECRET_KEY values, comma-separated, still accepted to read secrets sealed with them")
  ),
  webhookTimeoutMs: milliseconds("WEBHOOK_TIMEOUT_MS").pipe(
    Config.withDefault(10_000),
    Config.withDescription("Time a webhook receiver has to answer, in milliseconds")
  ),
  webhookPollIntervalMs: Config.option(milliseconds("WEBHOOK_POLL_INTERVAL_MS").pipe(
    Config.withDescription("How often due webhook events are looked for (default 1000 on PostgreSQL, 250 embedded)")
  )),
  webhookListen: Config.boolean("WEBHOOK_LISTEN").pipe(
    Config.withDefault(true),
    Config.withDescription("Wake webhook deliveries through PostgreSQL LISTEN/NOTIFY; false polls only")
  ),
  // Ten times the retry window (about three days): a receiver back from a long outage can still
  // be sent a month of events again (POST /webhook/resend); 0 keeps the log for ever.
  webhookLogRetentionDays: integerWithin(
    "WEBHOOK_LOG_RETENTION_DAYS",
    0,
    36_500,
    "WEBHOOK_LOG_RETENTION_DAYS must be from 0 (keep the delivery log for ever) to 36500"
  ).pipe(
    Config.withDefault(30),
    Config.withDescription("Delivered and failed webhook events older than this many days leave the delivery log; 0 keeps them")
  ),
  incomingMediaMaxBytes: atLeast("INCOMING_MEDIA_MAX_BYTES", 1).pipe(
    Config.withDefault(IncomingMedia.DEFAULT_MAX_BYTES),
    Config.withDescription("Largest incoming file stored, in bytes (default 64 MiB); larger ones are marked skipped")
  ),
  incomingMediaProcessDownloads: atLeast("INCOMING_MEDIA_PROCESS_DOWNLOADS", 1).pipe(
    Config.withDefault(IncomingMedia.DEFAULT_PROCESS_DOWNLOADS),
    Config.withDescription("Incoming files downloaded at once in the whole process, all numbers together")
  ),
  mediaUpkeepIntervalMs: milliseconds("MEDIA_UPKEEP_INTERVAL_MS").pipe(
    Config.withDefault(15 * 60 * 1000),
    Config.withDescription("How often deleted files' backups are purged and retention applied (default 15 minutes)")
  ),
  incomingMediaConcurrency: atLeast("INCOMING_MEDIA_CONCURRENCY", 1).pipe(
    Config.withDefault(IncomingMedia.DEFAULT_CONCURRENCY),
    Config.withDescription("Incoming files downloaded at once per number")
  ),
  exportJanitorIntervalMs: milliseconds("EXPORT_JANITOR_INTERVAL_MS").pipe(
    Config.withDefault(60_000),
    Config.withDescription("How often expired archives are deleted and stalled exports handed over again (ms)")
  ),
  mcpAllowedHosts: Config.array(Config.string(), "MCP_ALLOWED_HOSTS").pipe(
    Config.withDefault(HostCheck.LOCAL_HOSTS),
    Config.withDescription("Host names /api/mcp answers for, comma-separated (DNS rebinding protection); * allows any")
  ),
  billingTickMs: milliseconds("BILLING_TICK_MS", 10).pipe(
    Config.withDefault(60_000),
    Config.withDescription("How often the daily drawdown checks whether a new Almaty day has begun")
  ),
  paymentsTestSecret: Config.option(Config.redacted("PAYMENTS_TEST_SECRET").pipe(
    Config.withDescription("Turns on the test payment provider, whose webhooks are signed with this secret")
  )),
  metricsPort: Config.option(tcpPort("METRICS_PORT").pipe(
    Config.withDescription("Port of GET /metrics without a token (the process's metrics, an api process's with the cluster-wide gauges; keep it on the internal network)")
  )),
  metricsHost: Config.string("METRICS_HOST").pipe(
    Config.withDefault("0.0.0.0"),
    Config.withDescription("Address the METRICS_PORT listener binds")
  ),
  smtpUrl: Config.option(Config.redacted("SMTP_URL").pipe(
    Config.withDescription("SMTP server for cabinet mail: smtp://user:pass@host:587 (smtps:// for TLS); unset: mail goes to the log")
  )),
  mailFrom: Config.string("MAIL_FROM").pipe(
    Config.withDefault("wagate <no-reply@localhost>"),
    Config.withDescription("Sender of cabinet mail")
  ),
  publicUrl: Config.option(Config.string("PUBLIC_URL").pipe(
    Config.validate({ message: "PUBLIC_URL must start with http:// or https://", validation: (u) => /^https?:\/\//.test(u) }),
    Config.withDescription("Address customers reach the gateway at, for links in mail (https: cabinet cookies are Secure)")
  ))
})

export class Settings extends Context.Tag("@wagate/gateway/Settings")<Settings, GatewaySettings>() {
  static readonly layer = Layer.effect(Settings, settings)
  static readonly make = (overrides: Partial<GatewaySettings>) =>
    Layer.effect(Settings, Effect.map(settings, (base) => ({ ...base, ...overrides })))
}
