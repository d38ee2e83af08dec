/**
 * Which keys the stores accept.
 */
import { assert, describe, it } from "@effect/vitest"
import * as BlobKey from "../src/BlobKey.js"

describe("BlobKey.problem", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["media/12/3f9a.jpg", undefined],
    ["exports/7/Экспорт (март).zip", undefined],
    ["a", undefined],
    [".hidden/..dots../x", undefined],
    ["", "empty key"],
    ["/abs", "bad segment \"\" in key"],
    ["trailing/", "bad segment \"\" in key"],
    ["a//b", "bad segment \"\" in key"],
    ["../up", "bad segment \"..\" in key"],
    ["a/./b", "bad segment \".\" in key"],
    ["a\\b", "control character or backslash in key"],
    ["a\u0000b", "control character or backslash in key"],
    ["x".repeat(1024), undefined],
    ["x".repeat(1025), "key longer than 1024 bytes"],
    ["я".repeat(513), "key longer than 1024 bytes"]
  ]
  for (const [key, expected] of cases) {
    it(`${JSON.stringify(key.length > 40 ? `${key.slice(0, 10)}…(${key.length})` : key)}`, () => {
      assert.strictEqual(BlobKey.problem(key), expected)
    })
  }
})
