/**
 * How the simulated WhatsApp network behaves: which phones exist, how fast linking, acks and
 * reconnects happen. A plain value with defaults, changeable while the simulator runs.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"

const Millis = Schema.Int.pipe(Schema.nonNegative())

/**
 * The simulator's settings. Every delay is in milliseconds and measured on Effect's `Clock`, so
 * tests drive them with `TestClock`.
 *
 * @since 1.0.0
 */
export const SimConfig = Schema.Struct({
  /** Whether a phone nobody registered with `setPhone` has a WhatsApp account. */
  existsByDefault: Schema.Boolean,
  /** Whether a QR is "scanned" (or a pairing code entered) by itself, so demos link without a phone. */
  autoScan: Schema.Boolean,
  /** How long after `link` the automatic scan happens. */
  scanDelayMs: Millis,
  /** How long each QR lives before the next one replaces it. */
  qrRefreshMs: Millis,
  /** From a send to the `delivered` ack (or `failed`, when delivery cannot happen). */
  deliveredDelayMs: Millis,
  /** From a send to the `read` ack; null: the recipient never reads. */
  readDelayMs: Schema.NullOr(Millis),
  /** From a lost connection to WORKING again. */
  reconnectDelayMs: Millis
})

/** @since 1.0.0 */
export type SimConfig = typeof SimConfig.Type

/**
 * The defaults: every phone exists, linking completes by itself a second after it starts, QRs
 * refresh every 20 s, acks arrive after 0.5 s (delivered) and 2 s (read), reconnects take 1 s.
 *
 * @since 1.0.0
 */
export const defaults: SimConfig = {
  existsByDefault: true,
  autoScan: true,
  scanDelayMs: 1_000,
  qrRefreshMs: 20_000,
  deliveredDelayMs: 500,
  readDelayMs: 2_000,
  reconnectDelayMs: 1_000
}

/**
 * How many times a QR is replaced before linking gives up (so 6 QRs in all), as WhatsApp's
 * linked-device flow does when nobody scans.
 *
 * @since 1.0.0
 */
export const QR_REFRESHES = 5

/** The defaults with some settings changed. @since 1.0.0 */
export const make = (patch: Partial<SimConfig> = {}): SimConfig => ({ ...defaults, ...definedOnly(patch) })

/** A copy of `config` with the settings `patch` names. @since 1.0.0 */
export const update = (config: SimConfig, patch: Partial<SimConfig>): SimConfig => ({ ...config, ...definedOnly(patch) })

// An explicit `undefined` (an absent JSON field) must not erase a setting.
const definedOnly = (patch: Partial<SimConfig>): Partial<SimConfig> =>
  Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)) as Partial<SimConfig>
