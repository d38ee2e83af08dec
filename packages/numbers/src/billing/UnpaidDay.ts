/**
 * A send or a contact check on an Almaty day its number has not been charged for (the drawdown
 * has not reached its account yet, a moment after midnight) settles the account's day first, as
 * the drawdown would, once per number and day, so an unpaid day is never sent or checked on: the
 * number is charged, or paused for the balance.
 */
import * as Almaty from "@wagate/domain/Almaty"
import { AccountId } from "@wagate/domain/Ids"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { Billing } from "@wagate/store/Billing"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { NumberContext } from "../NumberContext.js"

/**
 * Settles the day of `now` first when the number is active and not charged for it; run in the
 * number's section, before it looks at `number.paused`. The other numbers whose pause changed
 * are told, without waiting (this one is in its section).
 */
export const make = (ctx: NumberContext) =>
  Effect.gen(function*() {
    const { number, numberId } = ctx
    const billing = yield* Billing
    const states = yield* NumberStates
    const numberClient = yield* NumberEntity.client

    const settleDay = Effect.fnUntraced(function*(now: number) {
      const settled = yield* billing.settle(AccountId.make(number.accountId), Almaty.dateOf(now), now)
      const fresh = yield* states.snapshot(numberId)
      if (Option.isSome(fresh)) {
        number.paused = fresh.value.paused
        number.pausedBy = fresh.value.pausedBy
        number.paidThrough = fresh.value.paidThrough
      }
      const others = settled.changes.filter((c) => c.numberId !== numberId)
      if (others.length > 0) {
        yield* Effect.forkDaemon(Effect.forEach(others, (c) =>
          numberClient(String(c.numberId)).RefreshPaused().pipe(
            Effect.timeout("5 seconds"),
            Effect.catchAllCause((cause) => Effect.logWarning(`number ${c.numberId} did not take its pause`, cause))
          ), { discard: true }))
      }
    })

    return (now: number) =>
      !number.paused && number.paidThrough !== null && Almaty.dateOf(now) > number.paidThrough
        ? settleDay(now)
        : Effect.void
  })
