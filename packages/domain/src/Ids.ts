/**
 * Branded ids and the scalar shapes the contract shares.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"

/** @since 1.0.0 */
export const AccountId = Schema.Int.pipe(Schema.positive(), Schema.brand("AccountId"))
/** @since 1.0.0 */
export type AccountId = typeof AccountId.Type

/** @since 1.0.0 */
export const NumberId = Schema.Int.pipe(Schema.positive(), Schema.brand("NumberId"))
/** @since 1.0.0 */
export type NumberId = typeof NumberId.Type

/** @since 1.0.0 */
export const MessageId = Schema.Int.pipe(Schema.positive(), Schema.brand("MessageId"))
/** @since 1.0.0 */
export type MessageId = typeof MessageId.Type

/** @since 1.0.0 */
export const ApiKeyId = Schema.Int.pipe(Schema.positive(), Schema.brand("ApiKeyId"))
/** @since 1.0.0 */
export type ApiKeyId = typeof ApiKeyId.Type

/** @since 1.0.0 */
export const ExportId = Schema.Int.pipe(Schema.positive(), Schema.brand("ExportId"))
/** @since 1.0.0 */
export type ExportId = typeof ExportId.Type

/**
 * An instant as the API writes it: ISO 8601 UTC with milliseconds, e.g. `2026-11-21T09:30:00.000Z`.
 *
 * @since 1.0.0
 */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  format: "date-time",
  description: "ISO 8601 UTC timestamp with milliseconds",
  examples: ["2026-11-21T09:30:00.000Z"]
})

/**
 * A phone number as the network knows it: international format, digits only.
 *
 * @since 1.0.0
 */
export const Phone = Schema.String.annotations({
  identifier: "Phone",
  description: "International format, digits only (Kazakhstan starts with 7)",
  examples: ["77011234567"]
})

/**
 * Money in KZT. Stored exactly (integer tiyn); the API shows tenge with at most two decimals.
 *
 * @since 1.0.0
 */
export const Kzt = Schema.Number.annotations({ identifier: "KZT", description: "Amount in KZT" })
