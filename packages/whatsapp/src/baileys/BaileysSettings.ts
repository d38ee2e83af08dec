/**
 * How the Baileys driver connects, reconnects and watches its connections. A plain value with
 * defaults; every duration is in milliseconds on Effect's `Clock`, so tests drive them with
 * `TestClock`. `config` reads the few worth changing in production from the environment.
 *
 * @since 1.0.0
 */
import * as Config from "effect/Config"

/** @since 1.0.0 */
export interface BaileysSettings {
  /** Sockets of this process that may be in their handshake at the same time. */
  readonly connectConcurrency: number
  /** A connect slot is given back by then even if the handshake has not finished. */
  readonly connectSlotMs: number
  /** First reconnect delay; each further attempt doubles it, up to `backoffMaxMs`. */
  readonly backoffBaseMs: number
  readonly backoffMaxMs: number
  /** Attempts a linking connection gets when WhatsApp cannot be reached, before FAILED. */
  readonly linkRetries: number
  /** A connection up at least this long starts the backoff from the first wait again. */
  readonly stableMs: number
  /** After this many reconnects in a row, each further one is logged as a warning. */
  readonly reconnectWarnAfter: number
  /** How often the watchdog looks at a WORKING connection. */
  readonly watchdogIntervalMs: number
  /** Without a received frame for this long, the watchdog sends a ping. */
  readonly idleMs: number
  /** A ping not answered within this is a dead (zombie) connection. */
  readonly pingTimeoutMs: number
  /** Events held in Baileys' buffer longer than this while WORKING is a zombie too. */
  readonly bufferStuckMs: number
  /** Longest wait for the network to accept a text message / a message with a file. */
  readonly sendTimeoutMs: number
  readonly mediaSendTimeoutMs: number
  /** Longest wait for a contact check, a group's subject, a media download. */
  readonly queryTimeoutMs: number
  /** How long a group's subject is trusted before it is fetched again. */
  readonly groupSubjectTtlMs: number
  /** WhatsApp's WebSocket endpoint (tests point it at a local server). */
  readonly webSocketUrl: string
  /** WhatsApp Web version to announce (`WA_VERSION`); null: the current one, fetched (see `WaVersion`). */
  readonly version: readonly [number, number, number] | null
  /** How often the current WhatsApp Web version is fetched, and how long a fetch may take. */
  readonly versionRefreshMs: number
  readonly versionFetchTimeoutMs: number
  /**
   * The linked device's name in the phone's "Linked devices" list, for devices linked by QR.
   * Linking by code needs an operating system's name there (WhatsApp refuses the code otherwise).
   */
  readonly deviceName: string
  /** Sent messages kept for WhatsApp's retry requests (`getMessage`) this long. */
  readonly sentRetentionMs: number
  /** Baileys' own log lines at this level and above reach the Effect logger. */
  readonly logLevel: "trace" | "debug" | "info" | "warn" | "error" | "silent"
}

/**
 * Defaults: 8 handshakes at once; reconnects after 1, 2, 4 ... 300 s (with jitter), for as long
 * as it takes (5 attempts for a linking connection); the watchdog looks every 15 s and pings after 45 s of silence, expecting an
 * answer within 10 s.
 *
 * @since 1.0.0
 */
export const defaults: BaileysSettings = {
  connectConcurrency: 8,
  connectSlotMs: 20_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 300_000,
  linkRetries: 5,
  stableMs: 60_000,
  reconnectWarnAfter: 10,
  watchdogIntervalMs: 15_000,
  idleMs: 45_000,
  pingTimeoutMs: 10_000,
  bufferStuckMs: 60_000,
  sendTimeoutMs: 30_000,
  mediaSendTimeoutMs: 120_000,
  queryTimeoutMs: 20_000,
  groupSubjectTtlMs: 10 * 60_000,
  webSocketUrl: "wss://web.whatsapp.com/ws/chat",
  version: null,
  versionRefreshMs: 24 * 3_600_000,
  versionFetchTimeoutMs: 5_000,
  deviceName: "wagate",
  sentRetentionMs: 14 * 24 * 3_600_000,
  logLevel: "warn"
}

/** @since 1.0.0 */
export const make = (overrides: Partial<BaileysSettings> = {}): BaileysSettings => ({ ...defaults, ...overrides })

/** An integer setting of at least `min`, checked on the variable itself so the refusal names it. */
const atLeast = (name: string, min: number) =>
  Config.integer(name).pipe(Config.validate({ message: `${name} must be at least ${min}`, validation: (n) => n >= min }))

/**
 * The settings from the environment: `WA_CONNECT_CONCURRENCY`, `WA_LINK_RETRIES`,
 * `WA_WATCHDOG_IDLE_SECONDS`, `WA_DEVICE_NAME`, `WA_LOG_LEVEL`, `WA_VERSION` (like `2.3000.1023`).
 *
 * @since 1.0.0
 */
export const config: Config.Config<BaileysSettings> = Config.all({
  connectConcurrency: atLeast("WA_CONNECT_CONCURRENCY", 1).pipe(
    Config.withDefault(defaults.connectConcurrency),
    Config.withDescription("WhatsApp handshakes in flight per process")
  ),
  linkRetries: atLeast("WA_LINK_RETRIES", 0).pipe(
    Config.withDefault(defaults.linkRetries),
    Config.withDescription("Attempts a linking connection gets when WhatsApp cannot be reached")
  ),
  idleSeconds: atLeast("WA_WATCHDOG_IDLE_SECONDS", 1).pipe(
    Config.withDefault(defaults.idleMs / 1000),
    Config.withDescription("Seconds without traffic before the watchdog pings a connection")
  ),
  deviceName: Config.string("WA_DEVICE_NAME").pipe(
    Config.withDefault(defaults.deviceName),
    Config.withDescription("Name of the linked device shown on the phone (QR linking)")
  ),
  logLevel: Config.literal("trace", "debug", "info", "warn", "error", "silent")("WA_LOG_LEVEL").pipe(
    Config.withDefault(defaults.logLevel),
    Config.withDescription("Level of Baileys' own log lines")
  ),
  version: Config.option(Config.string("WA_VERSION")).pipe(
    Config.withDescription("WhatsApp Web version to announce, like 2.3000.1023 (default: the current one, fetched daily)")
  )
}).pipe(Config.map(({ idleSeconds, version, ...rest }) =>
  make({
    ...rest,
    idleMs: idleSeconds * 1000,
    version: version._tag === "Some" ? parseVersion(version.value) : null
  })
))

/** `2.3000.1023` -> [2, 3000, 1023]; anything else -> null (Baileys' own version). @since 1.0.0 */
export const parseVersion = (text: string): readonly [number, number, number] | null => {
  const parts = text.trim().split(".").map((p) => Number(p))
  return parts.length === 3 && parts.every((p) => Number.isInteger(p) && p >= 0)
    ? [parts[0]!, parts[1]!, parts[2]!]
    : null
}
