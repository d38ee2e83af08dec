/**
 * GET /storage from the account's running totals, policy and balance: pure, so every `state` is
 * tested as a table.
 *
 * @since 1.0.0
 */
import type { MediaKind } from "@wagate/domain/Message"
import type { Storage } from "@wagate/domain/Storage"
import * as StoragePricing from "@wagate/domain/StoragePricing"

/** @since 1.0.0 */
export interface Input {
  readonly usage: ReadonlyArray<{ readonly numberId: number; readonly kind: MediaKind; readonly bytes: number; readonly files: number }>
  readonly policy: {
    readonly skip_groups: boolean
    readonly skip_unknown: boolean
    readonly unknown_max_mb: number | null
    readonly chat_daily_mb: number | null
    readonly ceiling_bytes: number | null
    readonly retention_days: number | null
  }
  readonly pendingFiles: number
  /** Message time of the oldest kept file. */
  readonly oldestFileAt: Date | null
  /** Whole days the balance covers at the account's daily charge (GET /balance's days_left). */
  readonly daysLeft: number
}

/** @since 1.0.0 */
export type State = "ok" | "over_allowance" | "unpaid" | "ceiling_reached"

/** @since 1.0.0 */
export const stateOf = (usedBytes: number, ceilingBytes: number | null, daysLeft: number): State => {
  if (ceilingBytes !== null && usedBytes >= ceilingBytes) return "ceiling_reached"
  if (usedBytes > StoragePricing.INCLUDED_BYTES) return daysLeft <= 0 ? "unpaid" : "over_allowance"
  return "ok"
}

const KINDS: ReadonlyArray<MediaKind> = ["photo", "video", "voice", "document", "sticker"]
const DAY_MS = 86_400_000

/** @since 1.0.0 */
export const make = (input: Input): Storage => {
  const used = input.usage.reduce((sum, r) => sum + r.bytes, 0)
  const files = input.usage.reduce((sum, r) => sum + r.files, 0)
  const charge = StoragePricing.chargeFor(used)
  const byNumber = new Map<number, { bytes: number; files: number }>()
  const byKind = new Map<MediaKind, { bytes: number; files: number }>()
  for (const r of input.usage) {
    if (r.files <= 0) continue
    const n = byNumber.get(r.numberId) ?? { bytes: 0, files: 0 }
    byNumber.set(r.numberId, { bytes: n.bytes + r.bytes, files: n.files + r.files })
    const k = byKind.get(r.kind) ?? { bytes: 0, files: 0 }
    byKind.set(r.kind, { bytes: k.bytes + r.bytes, files: k.files + r.files })
  }
  const { ceiling_bytes, retention_days, ...policy } = input.policy
  return {
    used_bytes: used,
    included_bytes: StoragePricing.INCLUDED_BYTES,
    over_bytes: charge.overBytes,
    files,
    packs: charge.packs.map((p) => ({ gb: p.gb, kzt: p.monthlyTiyn / 100, count: p.count })),
    monthly_charge: charge.monthlyTiyn / 100,
    daily_charge: charge.dailyTiyn / 100,
    ceiling_bytes,
    retention_days,
    pending_files: input.pendingFiles,
    policy,
    state: stateOf(used, ceiling_bytes, input.daysLeft),
    delete_at: retention_days === null || input.oldestFileAt === null
      ? null
      : new Date(input.oldestFileAt.getTime() + retention_days * DAY_MS).toISOString(),
    by_number: [...byNumber].sort(([a], [b]) => a - b).map(([number_id, t]) => ({ number_id, ...t })),
    by_kind: KINDS.flatMap((kind) => {
      const t = byKind.get(kind)
      return t === undefined ? [] : [{ kind, ...t }]
    })
  }
}
