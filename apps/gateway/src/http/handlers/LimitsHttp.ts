import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { quotaAt } from "@wagate/domain/ApiError"
import { CurrentKey, type Principal } from "@wagate/domain/Auth"
import * as DomainClock from "@wagate/domain/DomainClock"
import type { NumberId } from "@wagate/domain/Ids"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Settings } from "../../Config.js"
import { bounded } from "../EntityCalls.js"
import { NumberScope } from "../NumberScope.js"

/** A number's limits and trust index, as GET /limits and the MCP tool get_limits tell them. */
export const makeLimits = Effect.gen(function*() {
  const scope = yield* NumberScope
  const numbers = yield* NumberEntity.client
  const { entityTimeoutMs } = yield* Settings
  return Effect.fn("Limits.of")(function*(principal: Principal, from: string | number | undefined) {
    const number = yield* scope.acting(principal, from)
    return yield* numbers(String(number.id)).Limits().pipe(bounded(Duration.millis(entityTimeoutMs)))
  })
})

/**
 * A number's daily allowance now, as the X-RateLimit-* headers of a send tell it: for an answer
 * given without its entity (an idempotent replay).
 */
export const makeQuota = Effect.gen(function*() {
  const numbers = yield* NumberEntity.client
  const { entityTimeoutMs } = yield* Settings
  return Effect.fn("Limits.quota")(function*(numberId: NumberId) {
    const { limits, used } = yield* numbers(String(numberId)).Limits().pipe(bounded(Duration.millis(entityTimeoutMs)))
    const now = yield* DomainClock.now
    return quotaAt(now, limits.messages_per_day, used.messages)
  })
})

export const LimitsHttp = HttpApiBuilder.group(WagateApi, "limits", (handlers) =>
  Effect.gen(function*() {
    const limits = yield* makeLimits
    return handlers.handle("get", ({ urlParams }) => Effect.flatMap(CurrentKey, (principal) => limits(principal, urlParams.from)))
  }))
