/**
 * A number's counters and allowances as its entity keeps them: the day's usage (reset at Almaty
 * midnight), the send history the limits look at, the trust index (recomputed at most every five
 * minutes) and the daily limits of its tier.
 */
import * as Almaty from "@wagate/domain/Almaty"
import { quotaAt } from "@wagate/domain/ApiError"
import type { Limits } from "@wagate/domain/Limits"
import type { NumberSnapshot, NumberStates, SendHistory, Usage } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import type { Mutable } from "effect/Types"
import * as AntiMailing from "./policy/AntiMailing.js"
import * as SendPolicy from "./policy/SendPolicy.js"
import * as Tiers from "./policy/Tiers.js"
import * as TrustIndex from "./policy/TrustIndex.js"

/** The trust index is recomputed at most this often. */
const TRUST_REFRESH_MS = 5 * 60 * 1000

export type NumberCounters = ReturnType<typeof make>

/** The counters of `number`, starting from what was persisted at `start`. */
export const make = (options: {
  readonly states: NumberStates
  readonly number: Mutable<NumberSnapshot>
  readonly usage: Usage
  readonly history: SendHistory
}) => {
  const { number, states } = options
  const numberId = number.id
  let usage: Mutable<Usage> = { ...options.usage }
  const history: Mutable<Omit<SendHistory, "recentFirstContacts">> = { ...options.history }
  let recentFirstContacts = [...options.history.recentFirstContacts]
  let trust: { rating: number; enoughData: boolean; at: number; components: TrustIndex.TrustComponents | null } = {
    rating: 0,
    enoughData: false,
    at: Number.NEGATIVE_INFINITY,
    components: null
  }

  /**
   * The counters of the Almaty day containing `now`. Days only move forward: a clock stepped back
   * across midnight (an NTP correction) keeps counting on the later day rather than wipe it, which
   * would let the number send that day's messages again once the clock is past midnight once more.
   * (ISO dates compare as strings.)
   */
  const today = (now: number) => {
    const day = Almaty.dateOf(now)
    if (day > usage.day) usage = { day, messages: 0, newContacts: 0, checks: 0, lastCheckAt: null }
    return usage
  }

  const refreshTrust = (now: number) =>
    now - trust.at < TRUST_REFRESH_MS ? Effect.void : Effect.gen(function*() {
      const inputs = yield* states.trustInputs(numberId, now, number.connectedAt)
      const rating = TrustIndex.trustIndex(inputs)
      if (rating !== trust.rating || trust.at === Number.NEGATIVE_INFINITY) yield* states.setRating(numberId, rating)
      trust = { rating, enoughData: TrustIndex.enoughData(inputs), at: now, components: TrustIndex.components(inputs) }
    })

  /** The daily limits of the number's tier, whatever the network says. */
  const tierLimitsAt = (now: number) =>
    Tiers.dailyLimits({
      rating: trust.rating,
      enoughData: trust.enoughData,
      warmup: Tiers.inWarmup(number.connectedAt, now)
    })

  const limitsAt = (now: number) => {
    const daily = tierLimitsAt(now)
    // A restriction by the network closes first messages to new people while it lasts.
    const restricted = number.restrictedUntil !== null && number.restrictedUntil > now
    return restricted ? { ...daily, newContactsPerDay: 0 } : daily
  }

  /** First messages of the last hour, pruned to that hour at `now`. */
  const recentFirstContactsAt = (now: number) => {
    recentFirstContacts = AntiMailing.prune(recentFirstContacts, now)
    return recentFirstContacts
  }

  /**
   * A send decided at `now` was recorded at `recordedAt`: it counts on today and in the history
   * the limits look at. A first message is remembered by its record's time, as PostgreSQL gives
   * it after a restart, and by which a refusal finds it.
   */
  const countSend = (now: number, firstContact: boolean, textHash: string, recordedAt: number) => {
    const used = today(now)
    used.messages++
    if (firstContact) {
      used.newContacts++
      history.lastFirstContactAt = now
      recentFirstContacts.push({ at: recordedAt, textHash })
    }
    history.lastSendAt = now
  }

  /**
   * The network refused a send counted on `day` and recorded at `recordedAt`: it no longer counts
   * on that day's limits, if that day is still the one counted here (a day gone by is no longer
   * looked at), and a first message no longer counts toward a mailing pattern, as PostgreSQL
   * leaves it out after a restart.
   */
  const uncountSend = (day: string, recordedAt: number, firstContact: boolean) => {
    if (firstContact) {
      const i = recentFirstContacts.findLastIndex((c) => c.at === recordedAt)
      if (i >= 0) recentFirstContacts = recentFirstContacts.filter((_, j) => j !== i)
    }
    if (day !== usage.day) return
    usage.messages = Math.max(0, usage.messages - 1)
    if (firstContact) usage.newContacts = Math.max(0, usage.newContacts - 1)
  }

  /** What GET /limits shows. */
  const limitsView = (now: number) =>
    Effect.gen(function*() {
      const used = today(now)
      yield* refreshTrust(now)
      const daily = limitsAt(now)
      return {
        rating: trust.rating,
        tier: daily.tier.tier,
        tier_title: daily.tier.title,
        enough_data: trust.enoughData,
        limits: {
          messages_per_day: daily.messagesPerDay,
          new_contacts_per_day: daily.newContactsPerDay,
          checks_per_day: Tiers.CHECKS_PER_DAY,
          messages_per_second: Tiers.MESSAGES_PER_SECOND
        },
        used: { messages: used.messages, new_contacts: used.newContacts, checks: used.checks },
        cold_blocked_until: number.coldBlockedUntil !== null && number.coldBlockedUntil > now
          ? new Date(number.coldBlockedUntil).toISOString()
          : null,
        warmup: Tiers.inWarmup(number.connectedAt, now),
        paused: number.paused,
        pause_reason: number.paused ? number.pausedBy : null
      } satisfies Limits
    })

  // The last message handed to the network (or due to be), starting from the last one recorded,
  // which an earlier owner of the number may have sent just before it died.
  let lastHandOffAt = history.lastSendAt ?? Number.NEGATIVE_INFINITY

  /**
   * Messages reach the network in seconds of their own, like the limit that accepted them: a send
   * that waited for CPU between its acceptance and the network, or one recorded by a runner that
   * died and re-sent by the new owner, must not land in the same second as the next. Reserves
   * the next hand-over time and answers how long to wait for it (0: now).
   */
  const handOffDelay = (now: number) => {
    const slot = Math.max(now, lastHandOffAt + SendPolicy.MIN_INTERVAL_MS)
    lastHandOffAt = slot
    return slot - now
  }

  /** The six scores (0..1) behind the trust index, as of its last computation. */
  const trustFactors = (now: number) =>
    Effect.map(refreshTrust(now), () => {
      const c = trust.components!
      return {
        customers_start: c.customersStart,
        answers: c.answers,
        balance: c.balance,
        cold_volume: c.coldVolume,
        deliverability: c.deliverability,
        tenure: c.tenure
      }
    })

  return {
    trustFactors,
    history: history as Readonly<typeof history>,
    handOffDelay,
    today,
    refreshTrust,
    tierLimitsAt,
    limitsAt,
    quotaAt,
    recentFirstContactsAt,
    countSend,
    uncountSend,
    limitsView
  }
}
