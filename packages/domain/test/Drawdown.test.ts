import { assert, describe, it } from "@effect/vitest"
import { type BillableNumber, daysBetween, planDay } from "@wagate/domain/Drawdown"

const n = (id: number, pausedBy: BillableNumber["pausedBy"] = null, charged = false): BillableNumber => ({
  id,
  pausedBy,
  charged
})

describe("planDay", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly balance: number
    readonly storage?: number
    readonly numbers: ReadonlyArray<BillableNumber>
    readonly charge: ReadonlyArray<number>
    readonly paused: ReadonlyArray<number>
    readonly after: number
  }> = [
    { name: "covers all", balance: 99_000, numbers: [n(1), n(2)], charge: [1, 2], paused: [], after: 33_000 },
    { name: "covers the oldest only", balance: 65_999, numbers: [n(1), n(2)], charge: [1], paused: [2], after: 32_999 },
    { name: "covers none", balance: 32_999, numbers: [n(1), n(2)], charge: [], paused: [1, 2], after: 32_999 },
    { name: "exactly one day", balance: 33_000, numbers: [n(1)], charge: [1], paused: [], after: 0 },
    { name: "charged already: active, not again", balance: 0, numbers: [n(1, "balance", true)], charge: [], paused: [], after: 0 },
    { name: "a balance pause lifts when covered", balance: 33_000, numbers: [n(1, "balance")], charge: [1], paused: [], after: 0 },
    { name: "the operator's pause stays, uncharged", balance: 99_000, numbers: [n(1, "operator"), n(2)], charge: [2], paused: [1], after: 66_000 },
    { name: "storage first, even into debt", balance: 40_000, storage: 50_000, numbers: [n(1)], charge: [], paused: [1], after: -10_000 },
    { name: "storage then numbers", balance: 40_000, storage: 7_000, numbers: [n(1)], charge: [1], paused: [], after: 0 }
  ]
  for (const c of cases) {
    it(c.name, () => {
      const plan = planDay({ balance: c.balance, storage: c.storage ?? 0, numbers: c.numbers })
      assert.deepStrictEqual(plan.charge, c.charge)
      assert.deepStrictEqual(plan.numbers.filter((x) => x.pausedBy !== null).map((x) => x.id), c.paused)
      assert.strictEqual(plan.balance, c.after)
    })
  }
})

describe("daysBetween", () => {
  it("lists the days after the first up to the last, across months and leap days", () => {
    assert.deepStrictEqual(daysBetween("2028-02-27", "2028-03-01"), ["2028-02-28", "2028-02-29", "2028-03-01"])
    assert.deepStrictEqual(daysBetween("2030-01-01", "2030-01-01"), [])
    assert.deepStrictEqual(daysBetween("2030-01-02", "2030-01-01"), [])
  })
})
