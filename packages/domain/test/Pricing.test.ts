import { assert, describe, it } from "@effect/vitest"
import * as Almaty from "../src/Almaty.js"
import { balanceOf, MAX_BALANCE_TIYN, MAX_DAYS_AHEAD } from "../src/Pricing.js"

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
