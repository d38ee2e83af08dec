/**
 * The event queue of one simulated session: the network drops events in without waiting, and
 * one fiber per session hands them to `onEvent` one at a time, in order. A slow handler
 * therefore delays only its own session's events, never the network or other numbers.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { DriverEvent } from "../WhatsAppDriver.js"

/** @since 1.0.0 */
export interface SimMailbox {
  /** Queues an event; synchronous, so the network can emit inside its own atomic state changes. */
  readonly offer: (event: DriverEvent) => void
}

/**
 * A mailbox delivering to `onEvent` for as long as the scope is open.
 *
 * @since 1.0.0
 */
export const make = (
  phone: string,
  onEvent: (event: DriverEvent) => Effect.Effect<void>
): Effect.Effect<SimMailbox, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<DriverEvent>(), Queue.shutdown)
    // A handler that dies must not silence the session: the next events still arrive.
    const handle = (event: DriverEvent) =>
      onEvent(event).pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logError("simulator: the session's event handler died", defect).pipe(
            Effect.annotateLogs({ phone, event: event._tag })
          )
        )
      )
    yield* Queue.take(queue).pipe(Effect.flatMap(handle), Effect.forever, Effect.forkScoped)
    return {
      offer: (event) => {
        queue.unsafeOffer(event)
      }
    }
  })
