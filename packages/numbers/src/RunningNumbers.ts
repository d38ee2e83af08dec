/**
 * The numbers whose entities run on this process: each number entity is here from its start to
 * the end of its scope. The supervisor wakes only the numbers of its shards that are not, so a
 * round costs nothing for the numbers that are up.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"

/** @since 1.0.0 */
export class RunningNumbers extends Effect.Service<RunningNumbers>()("@wagate/numbers/RunningNumbers", {
  sync: () => {
    // Entities of a number at once (one on its way out while its shard came back): a count.
    const running = new Map<number, number>()
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
        })
    }
  }
}) {}
