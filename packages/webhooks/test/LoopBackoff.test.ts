/**
 * The delivery loop's backoff after a failure outside an attempt: 1 s doubling to 30 s, each
 * wait between half and all of its base.
 */
import { assert, describe, it } from "@effect/vitest"
import * as LoopBackoff from "../src/LoopBackoff.js"

describe("LoopBackoff", () => {
  it("waits 1 s after the first failure, doubling to 30 s, then 30 s", () => {
    assert.deepStrictEqual([1, 2, 3, 4, 5, 6, 7, 100].map(LoopBackoff.baseDelay), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
  })

  it("draws each wait from the upper half of its base, so accounts failing together come back apart", () => {
    assert.deepStrictEqual([0, 0.5, 0.999999].map((r) => LoopBackoff.delay(1, r)), [500, 750, 1000])
    assert.deepStrictEqual([0, 0.999999].map((r) => LoopBackoff.delay(9, r)), [15_000, 30_000])
  })
})
