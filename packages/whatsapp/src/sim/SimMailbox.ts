/**
 * The event queue of one simulated session: the network drops events in without waiting, and
 * they reach `onEvent` one at a time, in order. A slow handler therefore delays only its own
 * session's events, never the network or other numbers.
 *
 * A fiber hands over what is queued and ends when the queue is empty; the next event starts
 * another. No fiber waits between events: a session hears from the network every few seconds at
 * most, and a fiber parked that long for each session is memory the garbage collector promotes
 * and later sweeps on every event, while a short-lived one dies young.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
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
    // Its fibers are interrupted when the scope closes; events offered after that are dropped.
    const run = yield* FiberSet.makeRuntime<never, void, never>()
    let open = true
    yield* Effect.addFinalizer(() => Effect.sync(() => (open = false)))
    const queued: Array<DriverEvent> = []
    let handing = false
    // A handler that dies must not silence the session: the next events still arrive.
    const handle = (event: DriverEvent) =>
      onEvent(event).pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logError("simulator: the session's event handler died", defect).pipe(
            Effect.annotateLogs({ phone, event: event._tag })
          )
        )
      )
    const handOver: Effect.Effect<void> = Effect.suspend(() => {
      const event = queued.shift()
      if (event === undefined) {
        handing = false
        return Effect.void
      }
      return Effect.zipRight(handle(event), handOver)
    })
    return {
      offer: (event) => {
        if (!open) return
        queued.push(event)
        if (handing) return
        handing = true
        // Started on the scheduler, not now: the network is inside one of its atomic changes.
        run(handOver, { immediate: false })
      }
    }
  })
