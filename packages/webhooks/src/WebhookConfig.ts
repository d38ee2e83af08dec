/**
 * How webhooks are delivered in this process. The composition root fills it from configuration
 * (`WEBHOOK_*`); tests set what they drive (a short timeout, a fast poll, loopback receivers).
 *
 * @since 1.0.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"

/** @since 1.0.0 */
export interface WebhookSettings {
  /** Let webhook URLs reach loopback, private and other non-public addresses. Default false. */
  readonly allowPrivateUrls: boolean
  /** The receiver's whole answer must arrive within this. Default 10 seconds (the spec's reply time). */
  readonly timeout: Duration.Duration
  /**
   * How often due events are looked for in PostgreSQL: the safety net under LISTEN/NOTIFY, and the
   * only wake-up on the embedded database. Default 1 second, 250 ms on the embedded database.
   */
  readonly pollInterval: Duration.Duration | undefined
  /** Wake entities through LISTEN/NOTIFY on PostgreSQL (default true); false polls only. */
  readonly listen: boolean
  /** How long the previous secret keeps signing after a rotation. Default 24 hours. */
  readonly rotationGrace: Duration.Duration
}

/** @since 1.0.0 */
export const DEFAULT_TIMEOUT = Duration.seconds(10)

/** @since 1.0.0 */
export const defaults: WebhookSettings = {
  allowPrivateUrls: false,
  timeout: DEFAULT_TIMEOUT,
  pollInterval: undefined,
  listen: true,
  rotationGrace: Duration.hours(24)
}

/** The poll interval in effect on a database of this kind. @since 1.0.0 */
export const pollIntervalFor = (settings: WebhookSettings, database: "postgres" | "embedded"): Duration.Duration =>
  settings.pollInterval ?? (database === "embedded" ? Duration.millis(250) : Duration.seconds(1))

/** @since 1.0.0 */
export class WebhookConfig extends Context.Reference<WebhookConfig>()("@wagate/webhooks/WebhookConfig", {
  defaultValue: (): WebhookSettings => defaults
}) {
  /** @since 1.0.0 */
  static readonly layer = (settings: Partial<WebhookSettings>) =>
    Layer.succeed(WebhookConfig, { ...defaults, ...settings })
}
