/**
 * The number entity's messages between processes of two releases, as a rolling upgrade has them:
 * a reply is encoded by the runner's release and decoded by the caller's, as the cluster does
 * between runners (`Reply.Reply` of the caller's RPC).
 */
import * as Reply from "@effect/cluster/Reply"
import * as Snowflake from "@effect/cluster/Snowflake"
import * as Rpc from "@effect/rpc/Rpc"
import { assert, describe, it } from "@effect/vitest"
import * as E from "@wagate/domain/ApiError"
import { Limits } from "@wagate/domain/Limits"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"

const LimitsError = Schema.Union(E.Capacity, E.InternalError)
/** `Limits` of the previous release, which had no `pause_reason`. */
const previous = Rpc.make("Limits", { success: Limits.omit("pause_reason"), error: LimitsError })
const current = NumberEntity.protocol.requests.get("Limits")!

const limits = {
  rating: 62,
  tier: "good",
  tier_title: "Good",
  enough_data: true,
  limits: { messages_per_day: 500, new_contacts_per_day: 50, checks_per_day: 1000, messages_per_second: 1 },
  used: { messages: 3, new_contacts: 1, checks: 0 },
  cold_blocked_until: null,
  warmup: false,
  paused: true,
  pause_reason: "balance"
} as const

/** What `to`'s process reads of a reply that `from`'s process sent with `value`. */
const across = <From extends Rpc.Any, To extends Rpc.Any>(from: From, to: To, value: Rpc.Success<From>) =>
  Schema.encode(Reply.Reply(from))(
    new Reply.WithExit({ requestId: Snowflake.Snowflake(1n), id: Snowflake.Snowflake(2n), exit: Exit.succeed(value) as any })
  ).pipe(
    Effect.flatMap((wire) => Schema.decodeUnknown(Reply.Reply(to))(JSON.parse(JSON.stringify(wire)))),
    Effect.flatMap((reply) => reply._tag === "WithExit" ? reply.exit : Effect.dieMessage("a chunk")),
    Effect.orDie
  )

describe("Limits between releases", () => {
  it.effect("a runner of the previous release answers without pause_reason: it reads as null, the rest as sent", () =>
    Effect.gen(function*() {
      const { pause_reason: _, ...old } = limits
      const read = yield* across(previous, current, old)
      assert.deepStrictEqual(read, { ...old, pause_reason: null })
    }))

  it.effect("a runner of this release answers pause_reason; a caller of the previous release ignores it", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* across(current, current, limits), limits)
      const { pause_reason: _, ...old } = limits
      assert.deepStrictEqual(yield* across(current, previous, limits), old)
    }))
})
