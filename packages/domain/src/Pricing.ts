/**
 * The commercial constants of the service and what follows from them.
 *
 * @since 1.0.0
 */
import * as Almaty from "./Almaty.js"

/** A number costs 9 900 KZT per 30 days, drawn daily: 330 KZT a day. In tiyn (1/100 KZT). @since 1.0.0 */
export const NUMBER_DAILY_TIYN = 33_000

/** @since 1.0.0 */
export const tiynToKzt = (tiyn: number): number => tiyn / 100

/** @since 1.0.0 */
export const kztToTiyn = (kzt: number): number => Math.round(kzt * 100)

/**
 * Balance figures of an account: the daily charge of its active numbers, how many whole days the
 * balance covers, and the moment the paid period ends (the Almaty midnight after the last covered
 * day; null when nothing is being charged).
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
  const daysLeft = dailyTiyn > 0 ? Math.max(0, Math.floor(input.balanceTiyn / dailyTiyn)) : 0
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
