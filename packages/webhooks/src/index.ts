/**
 * Webhook delivery: the Webhook entity's behaviour, Standard Webhooks signing, the retry
 * schedule, the dispatcher that wakes entities, and the delivery log.
 *
 * @since 1.0.0
 */
export * as LoopBackoff from "./LoopBackoff.js"
export * as RetrySchedule from "./RetrySchedule.js"
export * as Signing from "./Signing.js"
export * as WebhookConfig from "./WebhookConfig.js"
export * as WebhookDispatcher from "./WebhookDispatcher.js"
export * as WebhookLive from "./WebhookLive.js"
export * as WebhookLog from "./WebhookLog.js"
export * as WebhookSender from "./WebhookSender.js"
export * as WebhookStore from "./WebhookStore.js"
export * as WebhookUrl from "./WebhookUrl.js"
