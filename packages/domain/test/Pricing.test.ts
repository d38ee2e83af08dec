import { assert, describe, it } from "@effect/vitest"
import * as Almaty from "../src/Almaty.js"
import { balanceOf, MAX_BALANCE_TIYN, MAX_DAYS_AHEAD, numberDaysLeft } from "../src/Pricing.js"

describe("Pricing.balanceOf", () => {
  const now = Date.parse("2030-01-01T05:00:00.000Z")
  const cases: ReadonlyArray<[string, number, number, number, number]> = [
    // label, balance tiyn, active numbers, storage tiyn a day, days left
    ["nothing charged", MAX_BALANCE_TIYN, 0, 0, 0],
    ["one number, 30 days", 30 * 33_000, 1, 0, 30],
    ["less than a day", 32_999, 1, 0, 0],
    ["a negative balance", -100, 1, 0, 0],
    ["the largest balance, one number: capped", MAX_BALANCE_TIYN, 1, 0, MAX_DAYS_AHEAD],
    ["the largest balance, the smallest storage pack alone: capped", MAX_BALANCE_TIYN, 0, 3300, MAX_DAYS_AHEAD],
    ["a balance past 2^53 tiyn: still capped", 2 ** 60, 1, 0, MAX_DAYS_AHEAD]
  ]
  for (const [label, balanceTiyn, activeNumbers, storageDailyTiyn, daysLeft] of cases) {
    it(label, () => {
      const b = balanceOf({ balanceTiyn, activeNumbers, pausedNumbers: 0, now, storageDailyTiyn })
      assert.strictEqual(b.days_left, daysLeft)
      if (b.paidUntil === null) return assert.strictEqual(activeNumbers + storageDailyTiyn, 0)
      assert.strictEqual(b.paidUntil, Almaty.nextMidnight(now) + daysLeft * Almaty.DAY_MILLIS)
      // An ordinary ISO date: four-digit year, never an expanded or invalid one.
      assert.match(new Date(b.paidUntil).toISOString(), /^\d{4}-/)
    })
  }
})

describe("Pricing.balanceOf while a number waits for money", () => {
  const now = Date.parse("2030-01-01T05:00:00.000Z")
  it("claims no days, and says what resumes the numbers: 330 KZT each, minus the balance", () => {
    // Storage alone (33 KZT a day) would last 7 days on 241 KZT; the paused number's day is not covered.
    const b = balanceOf({ balanceTiyn: 24_100, activeNumbers: 0, pausedNumbers: 1, balancePausedNumbers: 1, now, storageDailyTiyn: 3_300 })
    assert.deepStrictEqual([b.days_left, b.daysCovered, b.toResumeTiyn], [0, 7, 8_900])
    // A debt is paid first.
    assert.strictEqual(balanceOf({ balanceTiyn: -8_900, activeNumbers: 0, pausedNumbers: 2, balancePausedNumbers: 2, now }).toResumeTiyn, 74_900)
    // The operator's pause is no matter of money.
    const operator = balanceOf({ balanceTiyn: 24_100, activeNumbers: 0, pausedNumbers: 1, now, storageDailyTiyn: 3_300 })
    assert.deepStrictEqual([operator.days_left, operator.toResumeTiyn], [7, 0])
  })
})

describe("Pricing.numberDaysLeft", () => {
  const cases: ReadonlyArray<[string, number, number, number, ReadonlyArray<number>]> = [
    // label, balance tiyn, active numbers, storage tiyn a day, days per number (oldest first)
    ["whole days for all", 3 * 66_000, 2, 0, [3, 3]],
    ["a last day for the oldest only", 3 * 66_000 + 33_000, 2, 0, [4, 3]],
    ["storage first on the last day", 3 * 69_300 + 36_299, 2, 3_300, [3, 3]],
    ["storage first, then the oldest", 3 * 69_300 + 36_300, 2, 3_300, [4, 3]],
    ["a debt pays nothing", -8_900, 2, 3_300, [0, 0]],
    ["capped", MAX_BALANCE_TIYN, 3, 0, [MAX_DAYS_AHEAD, MAX_DAYS_AHEAD, MAX_DAYS_AHEAD]],
    ["no numbers", 99_000, 0, 3_300, []]
  ]
  for (const [label, balanceTiyn, activeNumbers, storageDailyTiyn, days] of cases) {
    it(label, () => assert.deepStrictEqual(numberDaysLeft({ balanceTiyn, activeNumbers, storageDailyTiyn }), days))
  }
})
