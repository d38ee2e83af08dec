/**
 * The clock the domain keeps time by: the number and account entities' days, pauses and
 * suspensions, webhook retries and the webhook loop's backoff, exports and upkeep. By default it
 * is the fiber's Clock (TestClock under @effect/vitest); a test of the whole gateway can set one
 * here, because entity handlers receive the context they were registered with, not the
 * registering fiber's clock.
 *
 * @since 1.0.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** @since 1.0.0 */
export class DomainClock extends Context.Reference<DomainClock>()("@wagate/domain/DomainClock", {
  defaultValue: (): Clock.Clock | null => null
}) {}

/** Milliseconds since the epoch by `clock`, a value of the DomainClock reference. @since 1.0.0 */
export const nowBy = (clock: DomainClock["Type"]): Effect.Effect<number> =>
  clock === null ? Clock.currentTimeMillis : clock.currentTimeMillis

/** Milliseconds since the epoch by the domain clock. @since 1.0.0 */
export const now: Effect.Effect<number> = Effect.flatMap(DomainClock, nowBy)

/**
 * Waits `duration` by the domain clock: a wait the domain decides (a backoff), which a test
 * that drives the domain clock drives too. @since 1.0.0
 */
export const sleep = (duration: Duration.DurationInput): Effect.Effect<void> =>
  Effect.flatMap(DomainClock, (clock) => clock === null ? Effect.sleep(duration) : clock.sleep(Duration.decode(duration)))
