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

/**
 * What a payment credited only up to the maximum says of the rest (`overTiyn` of `amountTiyn`),
 * for its ledger row and the operator's log. @since 1.0.0
 */
export const notCredited = (overTiyn: number, amountTiyn: number): string =>
  `${tiynToKzt(overTiyn)} KZT of ${tiynToKzt(amountTiyn)} KZT not credited: the balance would have come to more ` +
  `than an account may hold (${tiynToKzt(MAX_BALANCE_TIYN)} KZT); refund it to the payer or ` +
  `credit it once the balance has room`

/** @since 1.0.0 */
export const kztToTiyn = (kzt: number): number => Math.round(kzt * 100)

/**
 * Whole days after today the balance pays for each active number, oldest first (at most
 * MAX_DAYS_AHEAD). Each day draws the storage packs first, then the numbers oldest first while the
 * balance covers one more, as the drawdown does: so on the last day the money reaches, only the
 * oldest numbers are paid, and a newer number's paid period may end a day before an older one's.
 * A negative balance (storage owed) pays for no day.
 *
 * @since 1.0.0
 */
export const numberDaysLeft = (input: {
  readonly balanceTiyn: number
  readonly activeNumbers: number
  readonly storageDailyTiyn: number
}): ReadonlyArray<number> => {
  const dailyTiyn = input.activeNumbers * NUMBER_DAILY_TIYN + input.storageDailyTiyn
  if (input.activeNumbers === 0) return []
  const whole = Math.max(0, Math.floor(input.balanceTiyn / dailyTiyn))
  const lastDay = input.balanceTiyn - whole * dailyTiyn - input.storageDailyTiyn
  const paidOnLastDay = Math.max(0, Math.floor(lastDay / NUMBER_DAILY_TIYN))
  return Array.from(
    { length: input.activeNumbers },
    (_, i) => Math.min(MAX_DAYS_AHEAD, i < paidOnLastDay ? whole + 1 : whole)
  )
}

/**
 * Whether the balance covers one day of charges: `activeNumbers` numbers and storage packs of
 * `storageDailyTiyn` a day. An incoming file that takes the account past the included 5 GB is kept
 * only when it does with the packs the file needs counted: what keeping it costs, whatever the
 * charge was before it (0 while the usage was within the allowance and no number was charged).
 *
 * @since 1.0.0
 */
export const coversDay = (input: {
  readonly balanceTiyn: number
  readonly activeNumbers: number
  readonly storageDailyTiyn: number
}): boolean => input.balanceTiyn >= input.activeNumbers * NUMBER_DAILY_TIYN + input.storageDailyTiyn

/**
 * Balance figures of an account: the daily charge of its active numbers, how many whole days the
 * balance covers (at most MAX_DAYS_AHEAD), and the moment the paid period ends (the Almaty
 * midnight after the last covered day; null when nothing is being charged), for the account and
 * for each active number (oldest first, see numberDaysLeft).
 *
 * While a number is paused for the balance, the balance does not cover its day: `days_left` is 0,
 * whatever the storage packs alone would leave, and `toResumeTiyn` is what a top-up must bring
 * for every such number to resume today: 330 KZT each, plus what the balance owes (storage packs
 * are drawn every day, the files being kept, even when the balance does not cover them: the
 * balance goes negative, and a top-up settles that first). `daysCovered` is the days the balance
 * covers at the daily charge, paused numbers aside (0 when nothing is charged): GET /storage's
 * state goes by it; whether a new file is kept goes by coversDay.
 *
 * @since 1.0.0
 */
export const balanceOf = (input: {
  readonly balanceTiyn: number
  readonly activeNumbers: number
  readonly pausedNumbers: number
  /** Of the paused numbers, those paused for the balance (not by the operator). */
  readonly balancePausedNumbers?: number | undefined
  readonly now: number
  /** The daily storage charge (see StoragePricing); 0 within the included allowance. */
  readonly storageDailyTiyn?: number | undefined
}) => {
  const storageDailyTiyn = input.storageDailyTiyn ?? 0
  const waiting = input.balancePausedNumbers ?? 0
  const dailyTiyn = input.activeNumbers * NUMBER_DAILY_TIYN + storageDailyTiyn
  const daysCovered = dailyTiyn > 0 ? Math.min(MAX_DAYS_AHEAD, Math.max(0, Math.floor(input.balanceTiyn / dailyTiyn))) : 0
  const daysLeft = waiting === 0 ? daysCovered : 0
  const endOfToday = Almaty.nextMidnight(input.now)
  const paidUntil = dailyTiyn > 0 ? endOfToday + daysLeft * Almaty.DAY_MILLIS : null
  const numbersPaidUntil = numberDaysLeft({ ...input, storageDailyTiyn }).map((days) =>
    endOfToday + (waiting === 0 ? days : 0) * Almaty.DAY_MILLIS
  )
  return {
    balance: tiynToKzt(input.balanceTiyn),
    daily_charge: tiynToKzt(dailyTiyn),
    days_left: daysLeft,
    active_numbers: input.activeNumbers,
    paused_numbers: input.pausedNumbers,
    paidUntil,
    daysCovered,
    numbersPaidUntil,
    toResumeTiyn: Math.max(0, waiting * NUMBER_DAILY_TIYN - input.balanceTiyn)
  }
}
