/**
 * How long an account's delivery loop waits after a pass failed outside any delivery attempt:
 * PostgreSQL away (reading the queue, recording results) or a defect. Unlike a failed attempt
 * (RetrySchedule), nothing is counted against the events; the loop only waits before it tries
 * the pass again.
 *
 * Exponential from 1 second, doubling up to 30 seconds, each wait drawn from the upper half of
 * its base (between half and all of it) so that the loops of many accounts, which fail together
 * when the database goes away, do not come back to it together.
 *
 * @since 1.0.0
 */

/** @since 1.0.0 */
export const FIRST_DELAY_MS = 1000
/** @since 1.0.0 */
export const MAX_DELAY_MS = 30_000

/** The wait after the `failure`-th failed pass in a row, before jitter. @since 1.0.0 */
export const baseDelay = (failure: number): number => Math.min(FIRST_DELAY_MS * 2 ** (failure - 1), MAX_DELAY_MS)

/** The wait after the `failure`-th failed pass in a row; `random` is uniform in [0, 1). @since 1.0.0 */
export const delay = (failure: number, random: number): number => Math.round(baseDelay(failure) * (0.5 + 0.5 * random))
