/**
 * Whether a number may send a message now, and if not, which limit stops it. Pure: the entity
 * gives it the number's state and the clock's time.
 *
 * Of the limits that stop a send, the one with the longest wait answers, so a refused client
 * learns the real wait: a number at its daily limit answers `daily_limit` (until midnight), not
 * `rate_limited` (1 s); a first message half a second after another one waits the rest of the
 * 5 s, not 1 s.
 */
import * as Almaty from "@wagate/domain/Almaty"
import {
  ColdBlocked,
  DailyLimit,
  NewContactsLimit,
  RateLimited,
  SpamDetected
} from "@wagate/domain/ApiError"
import * as AntiMailing from "./AntiMailing.js"

export const MIN_INTERVAL_MS = 1000
export const FIRST_CONTACT_INTERVAL_MS = 5000

export interface SendState {
  readonly messagesToday: number
  readonly newContactsToday: number
  readonly messagesPerDay: number
  readonly newContactsPerDay: number
  readonly lastSendAt: number | null
  readonly lastFirstContactAt: number | null
  readonly coldBlockedUntil: number | null
  /** The network restricted the number (e.g. server error 463): no first messages until then. */
  readonly restrictedUntil: number | null
  readonly recentFirstContacts: ReadonlyArray<AntiMailing.FirstContact>
}

/** The limits a send can run into. */
export type Refusal = ColdBlocked | DailyLimit | NewContactsLimit | RateLimited | SpamDetected

export type Decision =
  | { readonly _tag: "Allow" }
  /** `coldBlockUntil`: the refusal also starts a 24-hour suspension of first messages. */
  | { readonly _tag: "Refuse"; readonly error: Refusal; readonly coldBlockUntil?: number }

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))

/** The refusal with the longest wait; of equal waits, the first (the order of the checks). */
const longest = (refusals: ReadonlyArray<Refusal>): Refusal | undefined =>
  refusals.reduce<Refusal | undefined>(
    (found, refusal) => found === undefined || (refusal.retryAfter ?? 0) > (found.retryAfter ?? 0) ? refusal : found,
    undefined
  )

/**
 * @param firstContact the recipient has never talked with this number (a reply to someone who
 *   wrote first is not a first contact, and stays allowed during a suspension)
 */
export const decide = (
  state: SendState,
  send: { readonly firstContact: boolean; readonly textHash: string },
  now: number
): Decision => {
  const untilMidnight = Almaty.secondsToMidnight(now)
  const refusals: Array<Refusal> = []
  if (send.firstContact && state.coldBlockedUntil !== null && state.coldBlockedUntil > now) {
    refusals.push(
      new ColdBlocked({
        error: `First messages to new people are suspended until ${new Date(state.coldBlockedUntil).toISOString()}`,
        retryAfter: seconds(state.coldBlockedUntil - now)
      })
    )
  }
  if (send.firstContact && state.restrictedUntil !== null && state.restrictedUntil > now) {
    refusals.push(
      new NewContactsLimit({
        error: `WhatsApp restricted this number: first messages to new people are refused until ${
          new Date(state.restrictedUntil).toISOString()
        }`,
        retryAfter: seconds(state.restrictedUntil - now)
      })
    )
  }
  if (state.messagesToday >= state.messagesPerDay) {
    refusals.push(
      new DailyLimit({
        error: `Daily limit of ${state.messagesPerDay} messages reached`,
        retryAfter: untilMidnight
      })
    )
  }
  if (send.firstContact && state.newContactsToday >= state.newContactsPerDay) {
    refusals.push(
      new NewContactsLimit({
        error: state.newContactsPerDay === 0
          ? "First messages to new people are closed at the Critical tier"
          : `Daily limit of ${state.newContactsPerDay} first messages to new people reached`,
        retryAfter: untilMidnight
      })
    )
  }
  if (state.lastSendAt !== null && now - state.lastSendAt < MIN_INTERVAL_MS) {
    refusals.push(new RateLimited({ error: "One message a second per number", retryAfter: 1 }))
  }
  if (
    send.firstContact && state.lastFirstContactAt !== null &&
    now - state.lastFirstContactAt < FIRST_CONTACT_INTERVAL_MS
  ) {
    refusals.push(
      new RateLimited({
        error: "At most one first message to a new person every 5 seconds",
        retryAfter: seconds(FIRST_CONTACT_INTERVAL_MS - (now - state.lastFirstContactAt))
      })
    )
  }
  const refusal = longest(refusals)
  if (refusal !== undefined) return { _tag: "Refuse", error: refusal }
  // Only a message every other limit allows can complete a mailing pattern.
  if (send.firstContact && AntiMailing.completesPattern(state.recentFirstContacts, send.textHash, now)) {
    return {
      _tag: "Refuse",
      error: new SpamDetected({ retryAfter: 86_400 }),
      coldBlockUntil: now + AntiMailing.BLOCK_MS
    }
  }
  return { _tag: "Allow" }
}
