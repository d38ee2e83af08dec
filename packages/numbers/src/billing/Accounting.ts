/**
 * Money as the gateway runs it: every change of an account's balance or of its numbers' pauses
 * goes through the ledger (`@wagate/store/Billing`, one transaction per change), then the
 * numbers whose pause changed are told at once, so a paused number refuses its next send and a
 * resumed one sends again without waiting.
 */
import * as Almaty from "@wagate/domain/Almaty"
import type { AccountId, NumberId } from "@wagate/domain/Ids"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { Billing, type PauseChange, type Settled } from "@wagate/store/Billing"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as DomainClock from "@wagate/domain/DomainClock"

export class Accounting extends Effect.Service<Accounting>()("@wagate/numbers/Accounting", {
  effect: Effect.gen(function*() {
    const billing = yield* Billing
    const numbers = yield* NumberEntity.client

    /**
     * Each changed number's entity takes its pause from the database. Retried for a while; an
     * entity that cannot be reached loads the pause when it next starts.
     */
    const tell = (changes: ReadonlyArray<PauseChange>) =>
      Effect.forEach(changes, (c) =>
        numbers(String(c.numberId)).RefreshPaused().pipe(
          Effect.timeout("5 seconds"),
          Effect.retry(Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(5)))),
          Effect.catchAllCause((cause) => Effect.logWarning(`number ${c.numberId} did not take its pause`, cause))
        ), { concurrency: 8, discard: true })

    const told = <A extends { readonly settled: Settled }, E>(effect: Effect.Effect<A, E>) =>
      Effect.tap(effect, (a) => tell(a.settled.changes))

    // The domain clock of the layer, whichever fiber calls (HTTP handlers run in their own).
    const clock = yield* DomainClock.DomainClock
    const now = clock === null ? Clock.currentTimeMillis : clock.currentTimeMillis
    const today = Effect.map(now, (now) => ({ now, day: Almaty.dateOf(now) }))

    /** Settles every account up to `day` (today by default); a second run charges nothing. */
    const drawdown = Effect.fn("Accounting.drawdown")(function*(day?: string) {
      const { now, day: current } = yield* today
      const results = yield* billing.drawdown(day ?? current, now)
      yield* tell(results.flatMap((r) => r.changes))
      return results
    })

    const addNumber = Effect.fn("Accounting.addNumber")(function*(accountId: AccountId, phone: string) {
      const { now } = yield* today
      return yield* told(billing.addNumber(accountId, phone, now))
    })

    const credit = Effect.fn("Accounting.credit")(function*(
      accountId: AccountId,
      tiyn: number,
      entry: {
        readonly kind: "top_up" | "payment"
        readonly note: string | null
        readonly reference?: string
        readonly upToMaximum?: boolean
      }
    ) {
      const { now } = yield* today
      return yield* told(billing.credit(accountId, tiyn, entry, now))
    })

    const refund = Effect.fn("Accounting.refund")(function*(accountId: AccountId, tiyn: number, note: string | null) {
      const { now } = yield* today
      const settled = yield* billing.refund(accountId, tiyn, note, now)
      yield* tell(settled.changes)
      return settled
    })

    const operatorPause = Effect.fn("Accounting.operatorPause")(function*(numberId: NumberId, paused: boolean) {
      const { now } = yield* today
      return yield* told(billing.operatorPause(numberId, paused, now))
    })

    return { drawdown, addNumber, credit, refund, operatorPause, today, now } as const
  })
}) {}
