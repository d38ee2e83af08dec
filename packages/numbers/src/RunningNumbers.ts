/**
 * The numbers whose entities run on this process: each number entity is here from its start to
 * the end of its scope. The supervisor wakes only the numbers of its shards that are not, so a
 * round costs nothing for the numbers that are up.
 *
 * A running entity also serves its sends here, so that a send made in the same process (REST,
 * MCP) reaches it without the cluster's messaging (its RPC client, mailbox and server, about a
 * sixth of a send's CPU). Such a call is the entity's own: as it stops, the entity lets the calls
 * under way finish, for as long as the cluster lets its own requests finish, and interrupts what
 * is left before it closes its connection; a number whose shard has moved on, or whose entity is
 * on its way out, is called through the cluster, which takes the call to its owner.
 *
 * @since 1.0.0
 */
import type { SendError, SendPayload, Sent } from "@wagate/entities/NumberEntity"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Scope from "effect/Scope"

/** A number's send, called in this process: what its entity's `Send` answers. @since 1.0.0 */
export type LocalSend = (payload: SendPayload) => Effect.Effect<Sent, SendError>

interface Served {
  readonly send: LocalSend
  /** Whether this runner still owns the number's shard. */
  readonly here: () => boolean
}

/** @since 1.0.0 */
export class RunningNumbers extends Effect.Service<RunningNumbers>()("@wagate/numbers/RunningNumbers", {
  sync: () => {
    // Entities of a number at once (one on its way out while its shard came back): a count.
    const running = new Map<number, number>()
    // The send of each number's newest entity that is not on its way out.
    const served = new Map<number, Served>()
    return {
      has: (numberId: number): boolean => running.has(numberId),
      /**
       * Counts the number as running for the current scope (its entity's). The release is added
       * to the scope as it is: `Effect.acquireRelease` would keep the fiber refs of the fiber
       * that started the entity (often an HTTP request's, with the request) for the entity's life.
       */
      hold: (numberId: number) =>
        Effect.flatMap(Effect.scope, (scope) => {
          running.set(numberId, (running.get(numberId) ?? 0) + 1)
          return Scope.addFinalizer(
            scope,
            Effect.sync(() => {
              const left = (running.get(numberId) ?? 1) - 1
              if (left > 0) running.set(numberId, left)
              else running.delete(numberId)
            })
          )
        }),
      /**
       * Serves the number's sends in this process for the current scope (its entity's), while
       * `here` says the runner owns the number's shard. Each call runs in the entity's context
       * (its clock, its scope: as the cluster would run it), in a fiber of its own, so that the
       * entity can interrupt it; as the scope closes, calls are no longer taken, and
       * those under way get up to `grace` to finish before they are interrupted (they then fail
       * as interrupted, which the caller answers as a runner stopping). Added last as the entity
       * starts, so that this runs before the rest of its teardown (the connection's close).
       */
      serve: (numberId: number, send: LocalSend, options: { readonly here: () => boolean; readonly grace: Duration.DurationInput }) =>
        Effect.flatMap(Effect.context<Scope.Scope>(), (context) => {
          const scope = Context.get(context, Scope.Scope)
          const calls = new Set<Fiber.RuntimeFiber<Sent, SendError>>()
          let drained: Deferred.Deferred<void> | undefined
          const ended = (fiber: Fiber.RuntimeFiber<Sent, SendError>) => {
            calls.delete(fiber)
            if (drained !== undefined && calls.size === 0) Deferred.unsafeDone(drained, Effect.void)
          }
          const entry: Served = {
            here: options.here,
            // Not the caller's child: a caller that stops waiting (its time limit) is answered
            // at once, as with a call through the cluster, even when the send cannot be
            // interrupted where it is; the send is told to stop, and the entity waits for it.
            send: (payload) =>
              Effect.uninterruptibleMask((restore) =>
                Effect.flatMap(Effect.forkDaemon(restore(Effect.mapInputContext(send(payload), () => context))), (fiber) => {
                  calls.add(fiber)
                  fiber.addObserver(() => ended(fiber))
                  return Effect.onInterrupt(restore(Fiber.join(fiber)), () => Fiber.interruptFork(fiber))
                })
              )
          }
          served.set(numberId, entry)
          return Scope.addFinalizer(
            scope,
            Effect.suspend(() => {
              if (served.get(numberId) === entry) served.delete(numberId)
              if (calls.size === 0) return Effect.void
              const done = drained = Deferred.unsafeMake<void>(FiberId.none)
              // Finalizers run uninterruptibly: the wait is made interruptible for its time limit.
              return Deferred.await(done).pipe(
                Effect.timeoutOption(options.grace),
                Effect.interruptible,
                Effect.zipRight(Effect.suspend(() => Fiber.interruptAll(calls)))
              )
            })
          )
        }),
      /** The number's send in this process, if its entity runs here and owns its shard. */
      localSend: (numberId: number): LocalSend | undefined => {
        const entry = served.get(numberId)
        return entry !== undefined && entry.here() ? entry.send : undefined
      }
    }
  }
}) {}
