/**
 * The number's session as its entity holds it: in a scope of its own within the entity's, so the
 * entity can give the number up (close its session) and take it again (open another).
 *
 * The cluster does not stop an entity it is still starting when the entity's shard moves to
 * another runner (a rolling restart, a runner joining). Such an entity opens no session if the
 * shard has moved on before it gets to it: one opened then would be the network's newest, and
 * the owner's, replaced, would be cut off until this one closed. One whose shard moves while its
 * session opens gives it up at once, which lets the owner's session take the device back. The
 * entity can outlive the move, and the shard can come back to its runner (a kill -9 of the
 * runner that took it): then it connects again when next asked for the session.
 */
import type { DriverEvent, Session } from "@wagate/whatsapp/WhatsAppDriver"
import { DriverUnavailable } from "@wagate/whatsapp/WhatsAppDriver"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"

export interface HeldSession {
  /** Opens the number's first session, unless the number's shard has moved on already. */
  readonly start: Effect.Effect<void>
  /** The number's session whichever it is now: opened again first if given up and back here. */
  readonly session: Session
  /** Gives the number up if its shard has moved away (forked: a session's own event may ask). */
  readonly giveUp: Effect.Effect<void>
  /** Connects again if the number was given up and its shard has come back. */
  readonly reclaim: Effect.Effect<void>
}

/** The holder of the number's sessions (`start` opens the first); connection events of a session closed since are dropped. */
export const make = (options: {
  readonly numberId: number
  /** The number's shard, for the log. */
  readonly shard: string
  /** The driver's `open`, for one session in the scope given. */
  readonly open: (onEvent: (event: DriverEvent) => Effect.Effect<void>) => Effect.Effect<Session, never, Scope.Scope>
  /** Applies an event of the current session (called only once `start` runs). */
  readonly onEvent: (event: DriverEvent) => Effect.Effect<void>
  /** Whether the number's shard has moved to another runner. */
  readonly movedAway: Effect.Effect<boolean>
  /** The entity's scope: every session's scope is within it. */
  readonly scope: Scope.Scope
}): Effect.Effect<HeldSession> =>
  Effect.gen(function*() {
    const { movedAway, numberId } = options
    let held: { readonly session: Session; readonly scope: Scope.CloseableScope } | null = null
    /** Which session's events are the number's. */
    let generation = 0
    /** One opening or closing at a time. */
    const switching = yield* Effect.makeSemaphore(1)

    const close = Effect.suspend(() => {
      if (held === null) return Effect.void
      const { scope } = held
      held = null
      generation++
      return Scope.close(scope, Exit.void)
    })

    /** Opens a session while none is held (at start, or given up); run it holding `switching`. */
    const connect = Effect.gen(function*() {
      const mine = ++generation
      const scope = yield* Scope.fork(options.scope, ExecutionStrategy.sequential)
      // A session given up says nothing more about the connection, but the acks and messages it
      // hands over as it closes are still the number's: dropped, they would be lost.
      const session = yield* options.open((event) =>
        mine === generation || event._tag !== "Connection" ? options.onEvent(event) : Effect.void
      ).pipe(
        Scope.extend(scope),
        Effect.onInterrupt(() => Scope.close(scope, Exit.void))
      )
      held = { session, scope }
      yield* Scope.addFinalizer(scope, Effect.logDebug(`number ${numberId}: session closed`))
      yield* Effect.logDebug(`number ${numberId}: session opened (shard ${options.shard}, held here: ${!(yield* movedAway)})`)
    })

    const giveUp = switching.withPermits(1)(
      Effect.suspend(() =>
        held === null ? Effect.void : Effect.zipRight(
          Effect.logDebug(`number ${numberId}: its shard has moved to another runner; its session here is closed`),
          close
        )
      ).pipe(Effect.whenEffect(movedAway))
    ).pipe(Effect.forkIn(options.scope), Effect.asVoid)

    const reclaim = Effect.suspend(() =>
      held !== null ? Effect.void : switching.withPermits(1)(
        Effect.suspend(() => held !== null ? Effect.void : Effect.asVoid(Effect.unlessEffect(connect, movedAway)))
      )
    )

    const current: Effect.Effect<Session, DriverUnavailable> = Effect.suspend(() =>
      held !== null ? Effect.succeed(held.session) : Effect.zipRight(
        reclaim,
        Effect.suspend(() =>
          held !== null
            ? Effect.succeed(held.session)
            : Effect.fail(new DriverUnavailable({ reason: "the number is served by another runner" }))
        )
      )
    )

    const session: Session = {
      link: (method) => Effect.flatMap(current, (s) => s.link(method)),
      send: (message) => Effect.flatMap(current, (s) => s.send(message)),
      exists: (phone) => Effect.flatMap(current, (s) => s.exists(phone)),
      logout: Effect.flatMap(Effect.option(current), Option.match({ onNone: () => Effect.void, onSome: (s) => s.logout }))
    }

    const start = Effect.zipRight(
      switching.withPermits(1)(Effect.unlessEffect(connect, movedAway)),
      // Opened for a shard that has moved on meanwhile.
      Effect.whenEffect(giveUp, movedAway)
    )
    return { session, start, giveUp, reclaim }
  })
