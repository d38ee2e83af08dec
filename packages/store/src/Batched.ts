/**
 * A writer that turns many small writes into few statements: callers queue their item and wait
 * for it to commit; one fiber writes whatever queued up while its previous statement ran, as one
 * statement. Under light load every item goes alone, at once; under heavy load the statements per
 * second stay flat while the items per statement grow.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
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
    // Plain callbacks instead of a queue and a deferred per item: an item costs one suspension
    // of its caller, which matters on the send path (a send queues four items).
    const pending: Array<Waiting<A, B, E>> = []
    const maxBatch = options.maxBatch ?? 1000
    let wake: (() => void) | undefined
    // Taken when the writer runs, not when it is woken: what queues up meanwhile goes along.
    const take = Effect.sync(() => pending.splice(0, maxBatch))
    const next = Effect.async<Array<Waiting<A, B, E>>>((resume) => {
      if (pending.length > 0) return resume(take)
      wake = () => {
        wake = undefined
        resume(take)
      }
      return Effect.sync(() => {
        wake = undefined
      })
    })
    const { singly } = options
    yield* next.pipe(
      Effect.flatMap((items) =>
        write(items.map((waiting) => waiting.item)).pipe(
          Effect.exit,
          Effect.flatMap((exit) => {
            if (Exit.isFailure(exit) && singly !== undefined && items.length > 1) {
              return Effect.forEach(items, (waiting) => Effect.map(Effect.exit(singly(waiting.item)), waiting.done), {
                discard: true
              })
            }
            items.forEach((waiting, i) => waiting.done(Exit.map(exit, (results) => results[i])))
            return Effect.void
          })
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )
    return (item: A) =>
      Effect.async<B, E>((resume) => {
        // A caller that stops waiting (interrupted) still has its item written.
        let waiting = true
        pending.push({ item, done: (exit) => waiting && resume(exit) })
        wake?.()
        return Effect.sync(() => {
          waiting = false
        })
      })
  })

interface Waiting<A, B, E> {
  readonly item: A
  readonly done: (exit: Exit.Exit<B, E>) => void
}
