/**
 * Tiers of the trust index and the daily limits they give a number.
 */
import type { Tier } from "@wagate/domain/Limits"

export const STANDARD_MESSAGES_PER_DAY = 1000
export const STANDARD_NEW_CONTACTS_PER_DAY = 150
export const WARMUP_MESSAGES_PER_DAY = 200
export const WARMUP_NEW_CONTACTS_PER_DAY = 30
export const WARMUP_DAYS = 3
export const CHECKS_PER_DAY = 200
export const MESSAGES_PER_SECOND = 1

export interface TierSpec {
  readonly tier: Tier
  readonly title: string
  /** Lowest index of the tier. */
  readonly min: number
  readonly messages: number
  /** 0 closes first messages to new people. */
  readonly newContacts: number
}

export const TIERS: ReadonlyArray<TierSpec> = [
  { tier: "excellent", title: "Excellent", min: 80, messages: 1.5, newContacts: 1.5 },
  { tier: "good", title: "Good", min: 60, messages: 1, newContacts: 1 },
  { tier: "medium", title: "Medium", min: 40, messages: 0.6, newContacts: 0.6 },
  { tier: "low", title: "Low", min: 20, messages: 0.3, newContacts: 0.2 },
  { tier: "critical", title: "Critical", min: 0, messages: 0.3, newContacts: 0 }
]

const GOOD = TIERS[1]

export const tierOf = (rating: number): TierSpec => TIERS.find((t) => rating >= t.min) ?? TIERS[TIERS.length - 1]

export interface DailyLimits {
  readonly tier: TierSpec
  readonly messagesPerDay: number
  readonly newContactsPerDay: number
}

/**
 * The limits of a number today. Without enough data the tier is Good (standard limits); during
 * warm-up the base is 200 messages and 30 new contacts instead of 1 000 and 150, times the same
 * multiplier.
 */
export const dailyLimits = (input: {
  readonly rating: number
  readonly enoughData: boolean
  readonly warmup: boolean
}): DailyLimits => {
  const tier = input.enoughData ? tierOf(input.rating) : GOOD
  const messages = input.warmup ? WARMUP_MESSAGES_PER_DAY : STANDARD_MESSAGES_PER_DAY
  const newContacts = input.warmup ? WARMUP_NEW_CONTACTS_PER_DAY : STANDARD_NEW_CONTACTS_PER_DAY
  return {
    tier,
    messagesPerDay: Math.floor(messages * tier.messages),
    newContactsPerDay: Math.floor(newContacts * tier.newContacts)
  }
}

/** Warm-up: the first 3 days after the number was first connected. */
export const inWarmup = (connectedAt: number | null, now: number): boolean =>
  connectedAt === null || now < connectedAt + WARMUP_DAYS * 86_400_000
