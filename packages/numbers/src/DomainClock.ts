/**
 * The clock the number and account entities keep days, pauses and suspensions by. By default it
 * is the fiber's Clock (TestClock under @effect/vitest); a test of the whole gateway can set
 * one here, because entity handlers receive the context they were registered with, not the
 * registering fiber's clock.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

export class DomainClock extends Context.Reference<DomainClock>()("@wagate/numbers/DomainClock", {
  defaultValue: (): Clock.Clock | null => null
}) {}

/** Milliseconds since the epoch by the domain clock. */
export const now: Effect.Effect<number> = Effect.flatMap(
  DomainClock,
  (clock) => (clock === null ? Clock.currentTimeMillis : clock.currentTimeMillis)
)
