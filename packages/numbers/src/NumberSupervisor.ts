/**
 * Keeps every linked number's entity running: every minute, each runner wakes the linked numbers
 * of the shards it owns whose entities are not running on it, a few at a time and with jitter,
 * so thousands of numbers coming back do not storm the network or the database. An entity that
 * is up keeps itself alive and costs a round nothing; this catches any that a crash left down.
 * (A runner taking shards over wakes their numbers at once: `NumberWaker`.)
 */
import * as EntityId from "@effect/cluster/EntityId"
import { Sharding } from "@effect/cluster/Sharding"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import { RunningNumbers } from "./RunningNumbers.js"

/** How many numbers are woken at once. */
export const WAKE_CONCURRENCY = 16
/** Each wake waits a random part of this first, so numbers do not all connect in step. */
export const WAKE_JITTER_MS = 250

/** Runs `wake` for every id, `concurrency` at a time, each after a random delay below `jitterMs`. */
export const spread = <E, R>(
  ids: ReadonlyArray<number>,
  wake: (id: number) => Effect.Effect<void, E, R>,
  options: { readonly concurrency: number; readonly jitterMs: number } = {
    concurrency: WAKE_CONCURRENCY,
    jitterMs: WAKE_JITTER_MS
  }
) =>
  Effect.forEach(
    ids,
    (id) => Effect.flatMap(Random.nextIntBetween(0, options.jitterMs), (jitter) => Effect.delay(wake(id), jitter)),
    { concurrency: options.concurrency, discard: true }
  )

/** How often a runner looks for numbers of its shards whose entities are not running. */
export const ROUND_INTERVAL = "1 minute"

/** The shard group of the number entities. */
export const GROUP = "default"

/** The shard of a number's entity. */
export const shardOf = (sharding: Sharding["Type"], numberId: number) =>
  sharding.getShardId(EntityId.make(String(numberId)), GROUP)

/** Whether this runner holds the shard of a number's entity. */
export const owns = (sharding: Sharding["Type"], numberId: number) => sharding.hasShardId(shardOf(sharding, numberId))

/** Of the linked numbers, those a round wakes: on a shard this runner owns, with no entity here. */
export const toWake = (
  live: ReadonlyArray<number>,
  owned: (numberId: number) => boolean,
  running: (numberId: number) => boolean
): ReadonlyArray<number> => live.filter((id) => owned(id) && !running(id))

export const NumberSupervisor = Layer.scopedDiscard(Effect.gen(function*() {
  const sharding = yield* Sharding
  const states = yield* NumberStates
  const running = yield* RunningNumbers
  const numbers = yield* NumberEntity.client
  const wake = (id: number) =>
    numbers(String(id)).Wake().pipe(
      Effect.timeout("30 seconds"),
      Effect.catchAllCause((cause) => Effect.logWarning(`could not wake number ${id}`, cause))
    )
  const round = Effect.flatMap(states.live(), (ids) => spread(toWake(ids, (id) => owns(sharding, id), running.has), wake)).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("waking numbers that are down failed", cause))
  )
  // The first round after an interval: at start the runner's numbers are woken as it takes
  // their shards (NumberWaker).
  yield* Effect.sleep(ROUND_INTERVAL).pipe(Effect.zipRight(round), Effect.forever, Effect.forkScoped)
}))
