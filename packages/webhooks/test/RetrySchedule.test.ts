/**
 * The retry schedule: exponential from 10 s, capped at 6 h, ±20 % jitter, 23 attempts over
 * about three days; only 2xx delivers, 410 holds, the last failure gives up.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RetrySchedule from "../src/RetrySchedule.js"

const S = 1000
const H = 3600 * S

describe("RetrySchedule", () => {
  it("waits 10 s after the first failure, doubling to 6 h, then 6 h", () => {
    const table: Array<[attempt: number, base: number]> = [
      [1, 10 * S],
      [2, 20 * S],
      [3, 40 * S],
      [4, 80 * S],
      [5, 160 * S],
      [6, 320 * S],
      [7, 640 * S],
      [8, 1280 * S],
      [9, 2560 * S],
      [10, 5120 * S],
      [11, 10240 * S],
      [12, 20480 * S],
      [13, 6 * H],
      [22, 6 * H]
    ]
    for (const [attempt, base] of table) assert.strictEqual(RetrySchedule.baseDelay(attempt), base, `after attempt ${attempt}`)
  })

  it("jitter moves each wait by at most 20 % either way", () => {
    for (const attempt of [1, 5, 13]) {
      const base = RetrySchedule.baseDelay(attempt)
      assert.strictEqual(RetrySchedule.delay(attempt, 0), Math.round(base * 0.8))
      assert.strictEqual(RetrySchedule.delay(attempt, 0.5), base)
      assert.isAtMost(RetrySchedule.delay(attempt, 0.999999), Math.round(base * 1.2))
    }
  })

  it("the 23 attempts span about three days", () => {
    const windowMs = RetrySchedule.retryWindowMs()
    assert.strictEqual(windowMs, 256_950 * S)
    assert.isAbove(windowMs, 70 * H)
    assert.isBelow(windowMs, 72 * H)
    let earliest = 0
    let latest = 0
    for (let attempt = 1; attempt < RetrySchedule.MAX_ATTEMPTS; attempt++) {
      earliest += RetrySchedule.delay(attempt, 0)
      latest += RetrySchedule.delay(attempt, 0.999999)
    }
    assert.isAbove(earliest, 56 * H)
    assert.isBelow(latest, 86 * H)
  })

  it("only a 2xx delivers; 410 holds; anything else is retried until the last attempt gives up", () => {
    const now = 1_000_000
    assert.deepStrictEqual(RetrySchedule.judge(200, 1, now, 0.5), { _tag: "Delivered" })
    assert.deepStrictEqual(RetrySchedule.judge(204, 23, now, 0.5), { _tag: "Delivered" })
    assert.deepStrictEqual(RetrySchedule.judge(299, 3, now, 0.5), { _tag: "Delivered" })
    assert.deepStrictEqual(RetrySchedule.judge(410, 1, now, 0.5), { _tag: "Gone" })
    for (const status of [null, 100, 199, 301, 304, 400, 404, 429, 500, 503]) {
      assert.deepStrictEqual(RetrySchedule.judge(status, 1, now, 0.5), { _tag: "Retry", at: now + 10 * S }, String(status))
    }
    assert.deepStrictEqual(RetrySchedule.judge(500, 22, now, 0.5), { _tag: "Retry", at: now + 6 * H })
    assert.deepStrictEqual(RetrySchedule.judge(500, 23, now, 0.5), { _tag: "GiveUp" })
    assert.deepStrictEqual(RetrySchedule.judge(null, 23, now, 0.5), { _tag: "GiveUp" })
  })
})
