/**
 * When a number sweeps (NumberConnection): at its own instant of every interval, one of
 * SWEEP_INSTANTS, so numbers sharing an instant share the statement that asks what is due.
 */
import { assert, describe, it } from "@effect/vitest"
import { SWEEP_INSTANTS, sweepInstant, untilInstant } from "../src/NumberConnection.js"

describe("sweep instants", () => {
  const interval = 30_000

  it("numbers spread over SWEEP_INSTANTS instants of the interval, evenly", () => {
    const instants = new Map<number, number>()
    for (let id = 1; id <= 3000; id++) {
      const instant = sweepInstant(id, interval)
      assert.isTrue(instant >= 0 && instant < interval)
      instants.set(instant, (instants.get(instant) ?? 0) + 1)
    }
    assert.strictEqual(instants.size, SWEEP_INSTANTS)
    assert.deepStrictEqual([...new Set(instants.values())], [3000 / SWEEP_INSTANTS])
  })

  it("the wait ends at the number's next instant, within one interval", () => {
    const instant = sweepInstant(7, interval)
    for (const now of [0, 1, instant - 1, instant, instant + 1, interval * 5 + 123, Date.parse("2026-11-26T12:00:00Z")]) {
      const wait = untilInstant(now, instant, interval)
      assert.isTrue(wait > 0 && wait <= interval, `${now}: ${wait}`)
      assert.strictEqual((now + wait - instant) % interval, 0, `${now}: ${wait}`)
    }
    // At its instant it waits a whole interval (it has just swept).
    assert.strictEqual(untilInstant(interval * 3 + instant, instant, interval), interval)
  })
})
