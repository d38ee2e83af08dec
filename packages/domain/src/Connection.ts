/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { Timestamp } from "./Ids.js"

/**
 * Connection status of a number: WORKING (sending allowed), SCAN_QR_CODE, STARTING, FAILED,
 * STOPPED (reconnect in the cabinet), none (never connected).
 *
 * @since 1.0.0
 */
export const ConnectionStatus = Schema.Literal("WORKING", "SCAN_QR_CODE", "STARTING", "FAILED", "STOPPED", "none")
/** @since 1.0.0 */
export type ConnectionStatus = typeof ConnectionStatus.Type

/**
 * A restriction the network put on the number (server error 463 and the like): until it ends,
 * first messages to people the number has not talked with are refused.
 *
 * @since 1.0.0
 */
export const Restriction = Schema.Struct({
  until: Timestamp,
  reason: Schema.String
}).annotations({ identifier: "Restriction" })
/** @since 1.0.0 */
export type Restriction = typeof Restriction.Type

/**
 * GET /numbers/{id}/connection. `restriction` is present only while the network restricts the
 * number.
 *
 * @since 1.0.0
 */
export const Connection = Schema.Struct({
  status: ConnectionStatus,
  phone: Schema.String,
  paid_until: Schema.NullOr(Timestamp),
  restriction: Schema.optional(Restriction.annotations({
    description: "Present while the network restricts the number: first messages to new people are refused until `until`"
  }))
}).annotations({ identifier: "Connection" })
/** @since 1.0.0 */
export type Connection = typeof Connection.Type
