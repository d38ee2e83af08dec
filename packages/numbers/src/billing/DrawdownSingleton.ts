/**
 * The daily drawdown runs in one place in the cluster (a singleton, moved to another runner when
 * its runner stops). It settles every account as soon as it starts (a day missed while the
 * gateway was down is charged now, each once) and then whenever the Almaty date by the domain
 * clock has moved on. It wakes at the Almaty midnight itself, by the domain clock, so a day
 * that is not paid for pauses its numbers when it begins, not up to a tick later; between
 * midnights it looks every `tick`, so a clock jump is caught within one tick. Running it twice,
 * on two runners or after a restart, charges nothing more: each account's day is settled once
 * in the database.
 */
import * as Singleton from "@effect/cluster/Singleton"
import * as Almaty from "@wagate/domain/Almaty"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Accounting } from "./Accounting.js"

export const layer = (options: { readonly tick: Duration.DurationInput }) =>
  Singleton.make(
    "billing-drawdown",
    Effect.gen(function*() {
      const accounting = yield* Accounting
      let settled: string | null = null
      for (;;) {
        const day = Almaty.dateOf(yield* accounting.now)
        if (day !== settled) {
          const results = yield* accounting.drawdown(day).pipe(
            Effect.tapErrorCause((cause) => Effect.logError("the daily drawdown failed", cause)),
            Effect.option
          )
          if (results._tag === "Some") {
            settled = day
            const charged = results.value.reduce((sum, r) => sum + r.charged, 0)
            if (charged > 0) {
              yield* Effect.logInfo(`drawdown ${day}: ${results.value.length} accounts, ${charged / 100} KZT`)
            }
          }
        }
        const now = yield* accounting.now
        yield* DomainClock.sleep(Duration.min(Duration.decode(options.tick), Duration.millis(Almaty.nextMidnight(now) - now)))
      }
    })
  )
