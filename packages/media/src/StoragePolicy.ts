/**
 * Whether a file is kept, under the account's storage policy and its storage state: pure rules,
 * applied to incoming files before the download (with the announced size) and again with the
 * size actually downloaded, under the account's lock as the file is counted (so files arriving
 * at once never pass the paid storage rule together). The ceiling is checked once more, for
 * incoming and sent files alike, by the store as it counts the file (`MediaFiles.add`), with
 * {@link ceilingReason} as the reason; so is the per-chat daily limit of incoming files, with
 * {@link chatDailyReason}.
 *
 * @since 1.0.0
 */

/** What the policy says (see docs/storage.md). @since 1.0.0 */
export interface Policy {
  readonly skip_groups: boolean
  readonly skip_unknown: boolean
  readonly unknown_max_mb: number | null
  readonly chat_daily_mb: number | null
  readonly ceiling_bytes: number | null
}

/** What is known of a file and its account when deciding. @since 1.0.0 */
export interface Facts {
  /** Bytes; 0 while unknown (not announced). */
  readonly size: number
  readonly direction: "in" | "out"
  readonly isGroup: boolean
  /** The number wrote to this person before (always true for sent files). */
  readonly knownSender: boolean
  /** Bytes of files already kept today (Almaty day) for this chat. */
  readonly chatBytesToday: number
  /** Bytes the account keeps now. */
  readonly usedBytes: number
  /** Over the included allowance and the balance does not cover a day of charges, this file's packs counted. */
  readonly unpaid: boolean
}

const MB = 1024 * 1024

const sizeText = (bytes: number) => bytes < MB ? `${bytes} bytes` : `${Math.round((bytes / MB) * 10) / 10} MB`

/**
 * Why a file that would take the account past its ceiling is not kept.
 *
 * @since 1.0.0
 */
export const ceilingReason = (ceilingBytes: number): string =>
  `the account's storage ceiling of ${sizeText(ceilingBytes)} is reached`

/**
 * Why an incoming file that would take its chat past the day's MB is not kept.
 *
 * @since 1.0.0
 */
export const chatDailyReason = (chatDailyMb: number): string =>
  `the storage policy keeps up to ${chatDailyMb} MB of files per chat a day, reached for this chat today`

/**
 * Why the file is not kept (the message's `media_skip_reason`), or null when it is.
 *
 * @since 1.0.0
 */
export const skipReason = (policy: Policy, facts: Facts): string | null => {
  if (facts.direction === "in") {
    if (policy.skip_groups && facts.isGroup) return "the storage policy does not keep files from group chats"
    if (!facts.knownSender) {
      if (policy.skip_unknown) return "the storage policy does not keep files from unknown senders"
      if (policy.unknown_max_mb !== null && facts.size > policy.unknown_max_mb * MB) {
        return `the storage policy keeps files from unknown senders up to ${policy.unknown_max_mb} MB (this one is ${sizeText(facts.size)})`
      }
    }
    if (policy.chat_daily_mb !== null && facts.chatBytesToday + facts.size > policy.chat_daily_mb * MB) {
      return chatDailyReason(policy.chat_daily_mb)
    }
  }
  if (policy.ceiling_bytes !== null && facts.usedBytes + facts.size > policy.ceiling_bytes) {
    return ceilingReason(policy.ceiling_bytes)
  }
  if (facts.direction === "in" && facts.unpaid) {
    return "storage above the included 5 GB is not paid for: the balance does not cover the storage charge"
  }
  return null
}
