/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { ConnectionStatus } from "./Connection.js"
import { PauseReason } from "./Drawdown.js"
import { Phone, Timestamp } from "./Ids.js"

/**
 * A phone number of the account, linked as a device.
 *
 * @since 1.0.0
 */
export const LinkedNumber = Schema.Struct({
  id: Schema.Int,
  phone: Phone,
  status: ConnectionStatus,
  paused: Schema.Boolean.annotations({ description: "Paused (the balance ran out, or by the operator); sends answer 402" }),
  pause_reason: Schema.NullOr(PauseReason),
  paid_until: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotations({ identifier: "Number" })
/** @since 1.0.0 */
export type LinkedNumber = typeof LinkedNumber.Type

/** @since 1.0.0 */
export const NumberList = Schema.Struct({
  numbers: Schema.Array(LinkedNumber),
  limit: Schema.Int.annotations({ description: "How many numbers the account may hold" })
}).annotations({ identifier: "NumberList" })
