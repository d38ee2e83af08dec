/**
 * A writer that turns many small writes into few statements: callers queue their item and wait
 * for it to commit; one fiber writes whatever queued up while its previous statement ran, as one
 * statement. Under light load every item goes alone, at once; under heavy load the statements per
 * second stay flat while the items per statement grow.
 *
 * @since 1.0.0
 */
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/**
 * Starts the writer in the current scope and returns the function that queues an item and waits
 * until `write` committed the batch it went into (failing or dying as `write` did).
 *
 * @since 1.0.0
 */
export const make = <A, E>(
  write: (batch: ReadonlyArray<A>) => Effect.Effect<void, E>,
  options: { readonly maxBatch?: number | undefined } = {}
): Effect.Effect<(item: A) => Effect.Effect<void, E>, never, Scope.Scope> =>
  withResults((batch: ReadonlyArray<A>) => Effect.as(write(batch), batch.map(() => undefined)), options)

/**
 * A writer whose items each get their own result: `write` answers one result per item, in the
 * items' order. With `singly`, a batch that fails is written again one item at a time, so one
 * item the database refuses (a used key, a value it cannot store) fails alone, with its own
 * error, and the others of its batch still commit.
 *
 * @since 1.0.0
 */
export const withResults = <A, B, E>(
  write: (batch: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>,
  options: {
    readonly maxBatch?: number | undefined
    readonly singly?: ((item: A) => Effect.Effect<B, E>) | undefined
  } = {}
): Effect.Effect<(item: A) => Effect.Effect<B, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<readonly [A, Deferred.Deferred<B, E>]>()
    const { singly } = options
    yield* Queue.takeBetween(queue, 1, options.maxBatch ?? 1000).pipe(
      Effect.flatMap((taken) => {
        const items = Chunk.toReadonlyArray(taken)
        const each = (exit: Exit.Exit<ReadonlyArray<B>, E>) =>
          Effect.forEach(items, ([, done], i) => Deferred.done(done, Exit.map(exit, (results) => results[i])), { discard: true })
        return write(items.map(([item]) => item)).pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Exit.isFailure(exit) && singly !== undefined && items.length > 1
              ? Effect.forEach(items, ([item, done]) => Effect.flatMap(Effect.exit(singly(item)), (one) => Deferred.done(done, one)), {
                discard: true
              })
              : each(exit)
          )
        )
      }),
      Effect.forever,
      Effect.forkScoped
    )
    return (item: A) =>
      Effect.flatMap(Deferred.make<B, E>(), (done) =>
        Effect.zipRight(Queue.offer(queue, [item, done] as const), Deferred.await(done)))
  })
