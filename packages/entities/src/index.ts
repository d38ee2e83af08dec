/**
 * @since 1.0.0
 */
export * as AccountEntity from "./AccountEntity.js"
export * as NumberEntity from "./NumberEntity.js"
export * as WebhookEntity from "./WebhookEntity.js"
export * as ExportEntity from "./ExportEntity.js"
