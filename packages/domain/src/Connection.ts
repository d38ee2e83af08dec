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
 * GET /numbers/{id}/connection.
 *
 * @since 1.0.0
 */
export const Connection = Schema.Struct({
  status: ConnectionStatus,
  phone: Schema.String,
  paid_until: Schema.NullOr(Timestamp)
}).annotations({ identifier: "Connection" })
/** @since 1.0.0 */
export type Connection = typeof Connection.Type
