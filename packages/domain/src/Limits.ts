/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { PauseReason } from "./Drawdown.js"
import { Timestamp } from "./Ids.js"

/** @since 1.0.0 */
export const Tier = Schema.Literal("excellent", "good", "medium", "low", "critical")
/** @since 1.0.0 */
export type Tier = typeof Tier.Type

/**
 * GET /limits: the trust index of a number, its limits for today and what it has used.
 *
 * @since 1.0.0
 */
export const Limits = Schema.Struct({
  rating: Schema.Int.annotations({ description: "Trust index 0-100" }),
  tier: Tier,
  tier_title: Schema.String,
  enough_data: Schema.Boolean,
  limits: Schema.Struct({
    messages_per_day: Schema.Int,
    new_contacts_per_day: Schema.Int,
    checks_per_day: Schema.Int,
    messages_per_second: Schema.Int
  }),
  used: Schema.Struct({
    messages: Schema.Int,
    new_contacts: Schema.Int,
    checks: Schema.Int
  }),
  cold_blocked_until: Schema.NullOr(Timestamp),
  warmup: Schema.Boolean,
  paused: Schema.Boolean.annotations({
    description: "The number is paused (the balance does not cover the day, or by the operator): sends and checks answer 402 number_paused"
  }),
  pause_reason: Schema.NullOr(PauseReason)
}).annotations({ identifier: "Limits" })
/** @since 1.0.0 */
export type Limits = typeof Limits.Type

/**
 * The six scores behind a number's trust index, each 0 (suspicious) to 1 (trustworthy): see
 * docs/trust-index.md. Shown by the cabinet's Limits page.
 *
 * @since 1.0.0
 */
export const TrustFactors = Schema.Struct({
  customers_start: Schema.Number,
  answers: Schema.Number,
  balance: Schema.Number,
  cold_volume: Schema.Number,
  deliverability: Schema.Number,
  tenure: Schema.Number
}).annotations({ identifier: "TrustFactors" })
/** @since 1.0.0 */
export type TrustFactors = typeof TrustFactors.Type
