/**
 * Brings a runner's numbers up as soon as it owns their shards. When a runner dies or stops, the
 * others take its shards over; nothing calls the entities of those numbers until a request or
 * the supervisor's next round (every minute) does, so this watch wakes the linked numbers of
 * every shard the runner has just acquired. Together with the lock timings in `Cluster.ts`, it
 * is what brings a killed runner's numbers back within seconds (see docs/operations.md).
 */
import * as EntityId from "@effect/cluster/EntityId"
import * as ShardId from "@effect/cluster/ShardId"
import { Sharding } from "@effect/cluster/Sharding"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { sharding as shardingSettings } from "./Cluster.js"

/** How often the runner looks for shards it did not own before. */
export const WATCH_INTERVAL = "500 millis"
/** Numbers woken at once after a takeover: enough to reconnect a runner's share in seconds. */
export const WAKE_CONCURRENCY = 32

const GROUP = "default"

export const NumberWaker = Layer.scopedDiscard(Effect.gen(function*() {
  const sharding = yield* Sharding
  const states = yield* NumberStates
  const numbers = yield* NumberEntity.client
  const shards = Array.from({ length: shardsPerGroup() }, (_, i) => ShardId.make(GROUP, i + 1))
  let owned = new Set<number>()
  /** Numbers whose wake failed (a starved runner, a shard moving again): tried again next time. */
  let failed = new Set<number>()

  const wake = (id: number) =>
    numbers(String(id)).Wake().pipe(
      Effect.timeout("15 seconds"),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.sync(() => failed.add(id)),
          Effect.logWarning(`could not wake number ${id} after a takeover; trying again`, cause)
        )
      )
    )

  const check = Effect.gen(function*() {
    const now = new Set(shards.filter((shard) => sharding.hasShardId(shard)).map((shard) => shard.id))
    const acquired = [...now].filter((id) => !owned.has(id))
    owned = now
    const retry = [...failed].filter((id) => now.has(sharding.getShardId(EntityId.make(String(id)), GROUP).id))
    failed = new Set()
    if (acquired.length === 0 && retry.length === 0) return
    const fresh = new Set(acquired)
    const ids = acquired.length === 0
      ? retry
      : [
        ...new Set([
          ...(yield* states.live()).filter((id) => fresh.has(sharding.getShardId(EntityId.make(String(id)), GROUP).id)),
          ...retry
        ])
      ]
    if (ids.length === 0) return
    yield* Effect.logInfo(`took over ${acquired.length} shards: waking ${ids.length} numbers`)
    const started = Date.now()
    yield* Effect.forEach(ids, wake, { concurrency: WAKE_CONCURRENCY, discard: true })
    yield* Effect.logInfo(`woke ${ids.length} numbers in ${Date.now() - started} ms`)
  })

  yield* check.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("shard watch failed", cause)),
    Effect.repeat(Schedule.spaced(WATCH_INTERVAL)),
    Effect.forkScoped
  )
}))

const shardsPerGroup = () => shardingSettings.shardsPerGroup ?? 300
