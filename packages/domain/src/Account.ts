/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { ConnectionStatus } from "./Connection.js"
import { Kzt, Timestamp } from "./Ids.js"
import { LinkedNumber } from "./LinkedNumber.js"

/** @since 1.0.0 */
export const Balance = Schema.Struct({
  balance: Kzt,
  daily_charge: Kzt.annotations({ description: "KZT drawn per day for the active numbers" }),
  days_left: Schema.Int,
  active_numbers: Schema.Int,
  paused_numbers: Schema.Int
}).annotations({ identifier: "Balance" })
/** @since 1.0.0 */
export type Balance = typeof Balance.Type

/**
 * GET /status: the numbers and the balance. A number key sees only its number and no balance.
 *
 * @since 1.0.0
 */
export const Summary = Schema.Struct({
  numbers: Schema.Array(LinkedNumber),
  balance: Schema.optional(Balance)
}).annotations({ identifier: "Summary" })
/** @since 1.0.0 */
export type Summary = typeof Summary.Type

/**
 * GET /me. `wa_status` and `wa_phone` describe the account's first number (null without one).
 *
 * @since 1.0.0
 */
export const Account = Schema.Struct({
  id: Schema.Int,
  email: Schema.String,
  company: Schema.String,
  paid_until: Schema.NullOr(Timestamp),
  wa_status: ConnectionStatus,
  wa_phone: Schema.NullOr(Schema.String),
  numbers: Schema.Int,
  paused_numbers: Schema.Int.annotations({ description: "Numbers paused (the balance does not cover the day, or by the operator)" }),
  numbers_limit: Schema.Int,
  created_at: Timestamp
}).annotations({ identifier: "Account" })
/** @since 1.0.0 */
export type Account = typeof Account.Type
