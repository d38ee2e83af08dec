/**
 * When an event is tried again, and what an attempt's answer means. Pure functions: the entity
 * applies them, docs/webhooks.md shows the table, the tests check both.
 *
 * Exponential backoff from 10 seconds, doubling up to 6 hours, each wait moved by up to ±20 %
 * at random so that the retries of many accounts do not arrive together. 23 attempts in all:
 * the last one about 71 hours (three days) after the first.
 *
 * @since 1.0.0
 */

const SECOND = 1000
const HOUR = 3600 * SECOND

/** @since 1.0.0 */
export const FIRST_DELAY_MS = 10 * SECOND
/** @since 1.0.0 */
export const MAX_DELAY_MS = 6 * HOUR
/** Each wait is its base times a factor drawn from [1 - JITTER, 1 + JITTER]. @since 1.0.0 */
export const JITTER = 0.2
/** Attempts of one event before it is given up (the first included). @since 1.0.0 */
export const MAX_ATTEMPTS = 23

/** The wait after the `failedAttempt`-th attempt failed, before jitter. @since 1.0.0 */
export const baseDelay = (failedAttempt: number): number =>
  Math.min(FIRST_DELAY_MS * 2 ** (failedAttempt - 1), MAX_DELAY_MS)

/** The wait after the `failedAttempt`-th attempt failed; `random` is uniform in [0, 1). @since 1.0.0 */
export const delay = (failedAttempt: number, random: number): number =>
  Math.round(baseDelay(failedAttempt) * (1 - JITTER + 2 * JITTER * random))

/** From the first attempt to the last, without jitter: about 71.4 hours. @since 1.0.0 */
export const retryWindowMs = (): number => {
  let total = 0
  for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) total += baseDelay(attempt)
  return total
}

/** What one attempt's answer leads to. @since 1.0.0 */
export type Verdict =
  /** A 2xx: the event is delivered. */
  | { readonly _tag: "Delivered" }
  /** 410 Gone: the receiver says the endpoint is no more. It is disabled; the event waits. */
  | { readonly _tag: "Gone" }
  /** Anything else: tried again at `at` (epoch ms). */
  | { readonly _tag: "Retry"; readonly at: number }
  /** Anything else on the last attempt: the event failed and the endpoint is disabled. */
  | { readonly _tag: "GiveUp" }

/**
 * The verdict on attempt number `attempt` (1 for the first), which got HTTP `status`, or none
 * when it timed out, the connection failed or the address was refused.
 *
 * @since 1.0.0
 */
export const judge = (status: number | null, attempt: number, now: number, random: number): Verdict => {
  if (status !== null && status >= 200 && status <= 299) return { _tag: "Delivered" }
  if (status === 410) return { _tag: "Gone" }
  if (attempt >= MAX_ATTEMPTS) return { _tag: "GiveUp" }
  return { _tag: "Retry", at: now + delay(attempt, random) }
}
