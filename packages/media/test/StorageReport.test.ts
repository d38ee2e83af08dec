import { assert, describe, it } from "@effect/vitest"
import { GB, INCLUDED_BYTES } from "@wagate/domain/StoragePricing"
import * as StoragePolicy from "../src/StoragePolicy.js"
import * as StorageReport from "../src/StorageReport.js"

const KEEP_ALL = { skip_groups: false, skip_unknown: false, unknown_max_mb: null, chat_daily_mb: null, ceiling_bytes: null }

describe("StorageReport", () => {
  const states: ReadonlyArray<[string, number, number | null, number, StorageReport.State]> = [
    ["within the allowance", INCLUDED_BYTES, null, 0, "ok"],
    ["above it, paid for", INCLUDED_BYTES + 1, null, 3, "over_allowance"],
    ["above it, the balance covers no more day", INCLUDED_BYTES + 1, null, 0, "unpaid"],
    ["at the ceiling", 10, 10, 5, "ceiling_reached"],
    ["at the ceiling and unpaid: the ceiling shows", INCLUDED_BYTES + GB, INCLUDED_BYTES, 0, "ceiling_reached"],
    ["below the ceiling", 9, 10, 0, "ok"]
  ]
  for (const [label, used, ceiling, daysLeft, state] of states) {
    it(label, () => assert.strictEqual(StorageReport.stateOf(used, ceiling, daysLeft), state))
  }

  it("sums the totals per number and kind, shows packs and charges, and delete_at from retention", () => {
    const report = StorageReport.make({
      usage: [
        { numberId: 2, kind: "video", bytes: INCLUDED_BYTES, files: 1 },
        { numberId: 1, kind: "photo", bytes: 3 * GB, files: 2 },
        { numberId: 2, kind: "photo", bytes: 0, files: 0 }
      ],
      policy: { ...KEEP_ALL, retention_days: 30 },
      pendingFiles: 4,
      oldestFileAt: new Date("2026-11-01T00:00:00.000Z"),
      daysLeft: 10
    })
    assert.deepStrictEqual(report, {
      used_bytes: INCLUDED_BYTES + 3 * GB,
      included_bytes: INCLUDED_BYTES,
      over_bytes: 3 * GB,
      files: 3,
      packs: [{ gb: 10, kzt: 990, count: 1 }],
      monthly_charge: 990,
      daily_charge: 33,
      ceiling_bytes: null,
      retention_days: 30,
      pending_files: 4,
      policy: { skip_groups: false, skip_unknown: false, unknown_max_mb: null, chat_daily_mb: null },
      state: "over_allowance",
      delete_at: "2026-12-01T00:00:00.000Z",
      by_number: [{ number_id: 1, bytes: 3 * GB, files: 2 }, { number_id: 2, bytes: INCLUDED_BYTES, files: 1 }],
      by_kind: [{ kind: "photo", bytes: 3 * GB, files: 2 }, { kind: "video", bytes: INCLUDED_BYTES, files: 1 }]
    })
  })
})

describe("StoragePolicy", () => {
  const facts: StoragePolicy.Facts = {
    size: 1000,
    direction: "in",
    isGroup: false,
    knownSender: true,
    chatBytesToday: 0,
    usedBytes: 0,
    unpaid: false
  }
  it("keeps everything by default", () => assert.isNull(StoragePolicy.skipReason(KEEP_ALL, facts)))
  it("sent files only meet the ceiling", () => {
    const strict = { ...KEEP_ALL, skip_groups: true, skip_unknown: true, chat_daily_mb: 0 }
    assert.isNull(StoragePolicy.skipReason(strict, { ...facts, direction: "out", isGroup: true, unpaid: true }))
    assert.match(StoragePolicy.skipReason({ ...KEEP_ALL, ceiling_bytes: 500 }, { ...facts, direction: "out" })!, /ceiling/)
  })
  it("unpaid storage stops incoming files", () =>
    assert.match(StoragePolicy.skipReason(KEEP_ALL, { ...facts, unpaid: true })!, /not paid for/))
  it("a known sender is not limited by the unknown-sender rules", () =>
    assert.isNull(StoragePolicy.skipReason({ ...KEEP_ALL, skip_unknown: true, unknown_max_mb: 0 }, facts)))
})
