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
 * A session that closes gracefully drains its mailbox first: what was queued before is still
 * handed over, and what could not be in time is given back to the network (see `SimSession`).
 *
 * @since 1.0.0
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import type { DriverEvent } from "../WhatsAppDriver.js"

/** @since 1.0.0 */
export interface SimMailbox {
  /** Queues an event; synchronous, so the network can emit inside its own atomic state changes. */
  readonly offer: (event: DriverEvent) => void
  /**
   * Takes no more events and waits, at most `within`, until those queued are handed over.
   * Answers those that were not (the one being handled first, then the rest, in order); they
   * are no longer handed over.
   */
  readonly drain: (within: Duration.DurationInput) => Effect.Effect<ReadonlyArray<DriverEvent>>
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
    /** The event being handed over now, if any. */
    let current: DriverEvent | null = null
    /** Told when the queue has run empty (a drain waits for it). */
    let emptied: Deferred.Deferred<void> | null = null
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
        current = null
        if (emptied !== null) Deferred.unsafeDone(emptied, Exit.void)
        return Effect.void
      }
      current = event
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
      },
      drain: (within) =>
        Effect.suspend(() => {
          open = false
          if (!handing) return Effect.succeed([])
          const done = emptied ??= Deferred.unsafeMake<void>(FiberId.none)
          // Interruptible: a drain runs in a finalizer, where the wait would not end at the limit.
          return Effect.map(Effect.timeoutOption(Effect.interruptible(Deferred.await(done)), within), (finished) => {
            if (finished._tag === "Some") return []
            const left = [...(current === null ? [] : [current]), ...queued.splice(0)]
            current = null
            return left
          })
        })
    }
  })
