/**
 * What file storage costs: 5 GB per account are included; usage above that is covered by paid
 * packs, billed monthly and drawn from the balance daily (a thirtieth of the month each day).
 * See docs/storage.md.
 *
 * @since 1.0.0
 */

/** @since 1.0.0 */
export const GB = 1024 * 1024 * 1024

/** Free allowance per account, summed over all its numbers. @since 1.0.0 */
export const INCLUDED_BYTES = 5 * GB

/**
 * The packs on sale, largest first. Prices are per 30 days in tiyn (1/100 KZT) and divide by 30
 * exactly, so the daily charge is a whole number of tiyn.
 *
 * @since 1.0.0
 */
export const PACKS: ReadonlyArray<{ readonly gb: number; readonly monthlyTiyn: number }> = [
  { gb: 100, monthlyTiyn: 690_000 },
  { gb: 10, monthlyTiyn: 99_000 }
]

/** @since 1.0.0 */
export interface PackCount {
  readonly gb: number
  readonly monthlyTiyn: number
  readonly count: number
}

/**
 * The cheapest set of packs that covers `overBytes`: as many large packs as fit whole, then small
 * packs for the rest, or one more large pack when that costs less than the small ones.
 *
 * @since 1.0.0
 */
export const packsFor = (overBytes: number): ReadonlyArray<PackCount> => {
  const [large, small] = PACKS
  if (overBytes <= 0) return []
  let largeCount = Math.floor(overBytes / (large.gb * GB))
  const rest = overBytes - largeCount * large.gb * GB
  let smallCount = Math.ceil(rest / (small.gb * GB))
  if (smallCount * small.monthlyTiyn >= large.monthlyTiyn) {
    largeCount += 1
    smallCount = 0
  }
  return [
    { ...large, count: largeCount },
    { ...small, count: smallCount }
  ].filter((p) => p.count > 0)
}

/**
 * Storage charges for a usage of `usedBytes`: the packs, their monthly price and the daily share
 * the balance drawdown takes.
 *
 * @since 1.0.0
 */
export const chargeFor = (usedBytes: number) => {
  const overBytes = Math.max(0, usedBytes - INCLUDED_BYTES)
  const packs = packsFor(overBytes)
  const monthlyTiyn = packs.reduce((sum, p) => sum + p.monthlyTiyn * p.count, 0)
  return { overBytes, packs, monthlyTiyn, dailyTiyn: monthlyTiyn / 30 } as const
}
