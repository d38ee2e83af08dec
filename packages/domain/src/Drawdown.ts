/**
 * The daily drawdown as a pure rule: what one Almaty day costs an account and which of its
 * numbers stay active.
 *
 * - Storage packs are charged first, every day, even when the balance is short (a debt the next
 *   top-up settles before any number resumes).
 * - Numbers are charged 330 KZT each in the order they were added (oldest first) while the
 *   balance covers a whole day; the rest are paused for the balance. So when the money covers
 *   some numbers but not all, the newest are paused first.
 * - A number already charged for the day stays active and is not charged again; a number paused
 *   by the operator is neither charged nor resumed.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { NUMBER_DAILY_TIYN } from "./Pricing.js"

/** Why a number is paused: the balance ran out, or the operator paused it. @since 1.0.0 */
export const PauseReason = Schema.Literal("balance", "operator").annotations({
  description: "Why the number is paused: `balance` (the balance does not cover the day; a top-up resumes it) or `operator` (paused by the operator); null when it is not paused"
})
/** @since 1.0.0 */
export type PauseReason = typeof PauseReason.Type

/**
 * Why a number is paused, from its stored flag and reason. A paused number without a reason was
 * paused before reasons were kept, which only the operator could do.
 *
 * @since 1.0.0
 */
export const pauseReason = (paused: boolean, stored: string | null): PauseReason | null =>
  paused ? (stored === "balance" ? "balance" : "operator") : null

/** @since 1.0.0 */
export interface BillableNumber {
  readonly id: number
  readonly pausedBy: PauseReason | null
  /** Charged for this day already (when added, resumed, or by an earlier run). */
  readonly charged: boolean
}

/** @since 1.0.0 */
export interface DayPlan {
  /** The balance after the day, in tiyn. */
  readonly balance: number
  /** Numbers to charge for the day. */
  readonly charge: ReadonlyArray<number>
  /** Storage charge in tiyn (0: none). */
  readonly storage: number
  /** Every number with its pause after the day. */
  readonly numbers: ReadonlyArray<BillableNumber>
}

/** @since 1.0.0 */
export const planDay = (input: {
  readonly balance: number
  /** Ordered by id: oldest first. */
  readonly numbers: ReadonlyArray<BillableNumber>
  /** The account's storage packs for the day, in tiyn, when not yet charged (else 0). */
  readonly storage: number
}): DayPlan => {
  let balance = input.balance - input.storage
  const charge: Array<number> = []
  const numbers = input.numbers.map((n): BillableNumber => {
    if (n.pausedBy === "operator") return n
    if (n.charged) return { ...n, pausedBy: null }
    if (balance >= NUMBER_DAILY_TIYN) {
      balance -= NUMBER_DAILY_TIYN
      charge.push(n.id)
      return { ...n, pausedBy: null, charged: true }
    }
    return { ...n, pausedBy: "balance" }
  })
  return { balance, charge, storage: input.storage, numbers }
}

/** The Almaty dates after `from` up to `to`, both as YYYY-MM-DD. @since 1.0.0 */
export const daysBetween = (from: string, to: string): ReadonlyArray<string> => {
  const days: Array<string> = []
  for (let t = Date.parse(`${from}T00:00:00Z`) + 86_400_000; t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    days.push(new Date(t).toISOString().slice(0, 10))
  }
  return days
}
