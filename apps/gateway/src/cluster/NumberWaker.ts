/**
 * Brings a runner's numbers up as soon as it owns their shards. When a runner dies or stops, the
 * others take its shards over; nothing calls the entities of those numbers until a request or
 * the supervisor's next round (every minute) does, so this watch wakes the linked numbers of
 * every shard the runner has just acquired. Together with the lock timings in `Cluster.ts`, it
 * is what brings a killed runner's numbers back within seconds (see docs/operations.md).
 */
import * as ShardId from "@effect/cluster/ShardId"
import { Sharding } from "@effect/cluster/Sharding"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { GROUP, owns, shardOf } from "@wagate/numbers/NumberSupervisor"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { sharding as shardingSettings } from "./Cluster.js"

/** How often the runner looks for shards it did not own before. */
export const WATCH_INTERVAL = "500 millis"
/**
 * How long one wake is waited for before it is tried again. Long enough for a runner reconnecting
 * hundreds of numbers on a busy host (0.2 to 0.4 s of its time a number, measured at load 13):
 * a wake given up too early is interrupted half-way and started over, which only adds work.
 */
export const WAKE_TIMEOUT = "60 seconds"
/** Numbers woken at once after a takeover: enough to reconnect a runner's share in seconds. */
export const WAKE_CONCURRENCY = 32

export const NumberWaker = Layer.scopedDiscard(Effect.gen(function*() {
  const sharding = yield* Sharding
  const states = yield* NumberStates
  const numbers = yield* NumberEntity.client
  const shards = Array.from({ length: shardsPerGroup() }, (_, i) => ShardId.make(GROUP, i + 1))
  let owned = new Set<number>()
  /** Numbers to wake, in the order their shards were taken over. */
  const pending = new Set<number>()
  /** Numbers whose wake failed (a starved runner, a shard moving again): tried again next time. */
  let failed = new Set<number>()

  // A number whose shard moved on while it waited its turn (another runner joined and took the
  // shard back, as when runners start one after another; or this runner's lock connection was
  // rebuilt and its shards released) is left alone: its new owner wakes it, or, if the shard
  // comes back here, the watch sees it taken over again. Waking it anyway would only wait on a
  // shard this runner no longer holds, and cost CPU that the lock refresh and the numbers still
  // owned need.
  const wake = (id: number) =>
    Effect.suspend(() =>
      !owns(sharding, id) ? Effect.void : numbers(String(id)).Wake().pipe(
        Effect.timeout(WAKE_TIMEOUT),
        Effect.catchAllCause((cause) =>
          Effect.zipRight(
            Effect.sync(() => failed.add(id)),
            Effect.logWarning(`could not wake number ${id} after a takeover; trying again`, cause)
          )
        )
      )
    )

  // The watch runs on its own, never behind a batch of wakes: a batch can take a minute on a
  // busy runner, and shards lost and taken back meanwhile must still be seen.
  const check = Effect.gen(function*() {
    const now = new Set(shards.filter((shard) => sharding.hasShardId(shard)).map((shard) => shard.id))
    const acquired = [...now].filter((id) => !owned.has(id))
    owned = now
    for (const id of failed) if (owns(sharding, id)) pending.add(id)
    failed = new Set()
    if (acquired.length === 0) return
    const fresh = new Set(acquired)
    const ids = (yield* states.live()).filter((id) => fresh.has(shardOf(sharding, id).id))
    for (const id of ids) pending.add(id)
    yield* Effect.logInfo(`took over ${acquired.length} shards: waking ${ids.length} numbers`)
  })

  const wakePending = Effect.gen(function*() {
    if (pending.size === 0) return
    const ids = [...pending]
    pending.clear()
    const started = Date.now()
    yield* Effect.forEach(ids, wake, { concurrency: WAKE_CONCURRENCY, discard: true })
    yield* Effect.logInfo(`woke ${ids.length} numbers in ${Date.now() - started} ms`)
  })

  yield* check.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("shard watch failed", cause)),
    Effect.repeat(Schedule.spaced(WATCH_INTERVAL)),
    Effect.forkScoped
  )
  yield* wakePending.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("waking numbers failed", cause)),
    Effect.repeat(Schedule.spaced(WATCH_INTERVAL)),
    Effect.forkScoped
  )
}))

const shardsPerGroup = () => shardingSettings.shardsPerGroup ?? 300
