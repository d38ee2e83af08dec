/**
 * The commercial constants of the service and what follows from them.
 *
 * @since 1.0.0
 */
import * as Almaty from "./Almaty.js"

/** A number costs 9 900 KZT per 30 days, drawn daily: 330 KZT a day. In tiyn (1/100 KZT). @since 1.0.0 */
export const NUMBER_DAILY_TIYN = 33_000

/**
 * The most an account's balance may hold: 1 000 000 000 KZT, in tiyn. It keeps every balance and
 * every sum of the ledger far below 2^53 tiyn, where a JavaScript number stops being exact, and
 * it is also the most one credit, payment or refund may be.
 *
 * @since 1.0.0
 */
export const MAX_BALANCE_TIYN = 100_000_000_000

/**
 * How far ahead `days_left` and `paid_until` look at most: 100 years. A balance that covers more
 * shows this many days, so `paid_until` stays a plain date whatever the balance and the charge.
 *
 * @since 1.0.0
 */
export const MAX_DAYS_AHEAD = 36_500

/** @since 1.0.0 */
export const tiynToKzt = (tiyn: number): number => tiyn / 100

/**
 * Why a credit is refused: it would take the balance past MAX_BALANCE_TIYN.
 *
 * @since 1.0.0
 */
export const overMaximum = (balanceTiyn: number, creditTiyn: number): string =>
  `The balance (${tiynToKzt(balanceTiyn)} KZT) and the credit (${tiynToKzt(creditTiyn)} KZT) would come to ` +
  `more than an account may hold (${tiynToKzt(MAX_BALANCE_TIYN)} KZT)`

/** @since 1.0.0 */
export const kztToTiyn = (kzt: number): number => Math.round(kzt * 100)

/**
 * Balance figures of an account: the daily charge of its active numbers, how many whole days the
 * balance covers (at most MAX_DAYS_AHEAD), and the moment the paid period ends (the Almaty
 * midnight after the last covered day; null when nothing is being charged).
 *
 * @since 1.0.0
 */
export const balanceOf = (input: {
  readonly balanceTiyn: number
  readonly activeNumbers: number
  readonly pausedNumbers: number
  readonly now: number
  /** The daily storage charge (see StoragePricing); 0 within the included allowance. */
  readonly storageDailyTiyn?: number | undefined
}) => {
  const dailyTiyn = input.activeNumbers * NUMBER_DAILY_TIYN + (input.storageDailyTiyn ?? 0)
  const daysLeft = dailyTiyn > 0 ? Math.min(MAX_DAYS_AHEAD, Math.max(0, Math.floor(input.balanceTiyn / dailyTiyn))) : 0
  const paidUntil = dailyTiyn > 0 ? Almaty.nextMidnight(input.now) + daysLeft * Almaty.DAY_MILLIS : null
  return {
    balance: tiynToKzt(input.balanceTiyn),
    daily_charge: tiynToKzt(dailyTiyn),
    days_left: daysLeft,
    active_numbers: input.activeNumbers,
    paused_numbers: input.pausedNumbers,
    paidUntil
  }
}
