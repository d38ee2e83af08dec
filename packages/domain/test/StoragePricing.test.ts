import { assert, describe, it } from "@effect/vitest"
import { chargeFor, GB, INCLUDED_BYTES } from "../src/StoragePricing.js"

describe("StoragePricing", () => {
  const cases: ReadonlyArray<[string, number, ReadonlyArray<[number, number]>, number, number]> = [
    // label, used bytes, packs [gb, count], monthly KZT, daily tiyn
    ["nothing stored", 0, [], 0, 0],
    ["exactly the allowance", INCLUDED_BYTES, [], 0, 0],
    ["one byte over", INCLUDED_BYTES + 1, [[10, 1]], 990, 3300],
    ["12 GB over: two small packs", INCLUDED_BYTES + 12 * GB, [[10, 2]], 1980, 6600],
    ["65 GB over: seven small cost more than one large", INCLUDED_BYTES + 65 * GB, [[100, 1]], 6900, 23000],
    ["55 GB over: six small packs", INCLUDED_BYTES + 55 * GB, [[10, 6]], 5940, 19800],
    ["130 GB over: one large and three small", INCLUDED_BYTES + 130 * GB, [[100, 1], [10, 3]], 9870, 32900]
  ]
  for (const [label, used, packs, monthlyKzt, dailyTiyn] of cases) {
    it(label, () => {
      const charge = chargeFor(used)
      assert.deepStrictEqual(charge.packs.map((p) => [p.gb, p.count]), [...packs])
      assert.strictEqual(charge.monthlyTiyn / 100, monthlyKzt)
      assert.strictEqual(charge.dailyTiyn, dailyTiyn)
      assert.isTrue(Number.isInteger(charge.dailyTiyn))
    })
  }
})
