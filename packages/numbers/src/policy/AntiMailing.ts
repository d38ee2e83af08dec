/**
 * Anti-mailing protection: the same text to 25 or more new people within an hour, or 40 or more
 * new contacts within an hour, suspends first messages to new people for 24 hours.
 */
import { createHash } from "node:crypto"

export const WINDOW_MS = 60 * 60 * 1000
export const BLOCK_MS = 24 * 60 * 60 * 1000
export const SAME_TEXT_PEOPLE = 25
export const NEW_CONTACTS_PER_HOUR = 40

/** A first message to a new person, as the detector remembers it. */
export interface FirstContact {
  readonly at: number
  readonly textHash: string
}

/**
 * What makes two texts "the same": case, spacing and punctuation do not count, so trivial
 * variations of one mailing are still one mailing.
 */
export const textHash = (text: string): string =>
  createHash("sha256")
    .update(text.toLowerCase().normalize("NFKC").replace(/[\s\p{P}\p{S}]+/gu, " ").trim())
    .digest("base64url")
    .slice(0, 22)

/**
 * Whether sending one more first message with `hash` at `now` completes a mailing pattern.
 * `recent` are the first messages already sent (older ones are ignored).
 */
export const completesPattern = (recent: ReadonlyArray<FirstContact>, hash: string, now: number): boolean => {
  let inWindow = 0
  let sameText = 0
  for (const c of recent) {
    if (c.at <= now - WINDOW_MS || c.at > now) continue
    inWindow++
    if (c.textHash === hash) sameText++
  }
  return sameText + 1 >= SAME_TEXT_PEOPLE || inWindow + 1 >= NEW_CONTACTS_PER_HOUR
}

/** Drops what has left the window, keeping memory bounded. */
export const prune = (recent: ReadonlyArray<FirstContact>, now: number): Array<FirstContact> =>
  recent.filter((c) => c.at > now - WINDOW_MS)
