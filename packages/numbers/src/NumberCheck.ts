/**
 * Contact checks of a number: one a second, 200 a day, while it is connected and paid for (a
 * check on a day not charged yet settles the day first, as a send does).
 */
import * as Almaty from "@wagate/domain/Almaty"
import { Capacity, DailyLimit, NotConnected, NumberPaused, RateLimited } from "@wagate/domain/ApiError"
import type { NumberStates } from "@wagate/store/NumberStates"
import type { Session } from "@wagate/whatsapp/WhatsAppDriver"
import * as Effect from "effect/Effect"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as UnpaidDay from "./billing/UnpaidDay.js"
import type { NumberContext } from "./NumberContext.js"
import * as Tiers from "./policy/Tiers.js"

const CHECK_INTERVAL_MS = 1000

export const make = (ctx: NumberContext, session: Session, states: NumberStates) => Effect.gen(function*() {
  const { counters, number, numberId } = ctx
  const settleUnpaidDay = yield* UnpaidDay.make(ctx)
  // The last check this entity made; before its first, the day's last one as recorded (by an
  // earlier owner of the number, before a restart or a move).
  let lastCheckAt: number | null = null

  return (phone: string) =>
    Effect.gen(function*() {
      const now = yield* DomainClock.now
      const used = counters.today(now)
      const quota = () => counters.quotaAt(now, Tiers.CHECKS_PER_DAY, counters.today(now).checks)
      yield* settleUnpaidDay(now)
      if (number.paused) return yield* NumberPaused.because(number.pausedBy)
      if (ctx.connection.current.status !== "WORKING") return yield* new NotConnected()
      if (used.checks >= Tiers.CHECKS_PER_DAY) {
        return yield* new DailyLimit({
          error: `Daily limit of ${Tiers.CHECKS_PER_DAY} contact checks reached`,
          retryAfter: Almaty.secondsToMidnight(now),
          quota: quota()
        })
      }
      const last = lastCheckAt ?? used.lastCheckAt
      if (last !== null && now - last < CHECK_INTERVAL_MS) {
        // Retry-After 60, as the spec gives rate_limited on every endpoint but the send; the
        // sentence says the real wait.
        return yield* new RateLimited({
          error: "One contact check a second per number; the next is allowed in 1 s",
          retryAfter: 60,
          quota: quota()
        })
      }
      const result = yield* session.exists(phone).pipe(
        Effect.catchTag("DriverUnavailable", (e) => new Capacity({ error: `Check unavailable: ${e.reason}`, retryAfter: 5 }))
      )
      lastCheckAt = now
      used.checks++
      used.lastCheckAt = now
      yield* states.countCheck(numberId, used.day, new Date(now))
      return { exists: result.exists, chatId: result.chatId, quota: quota() }
    })
})
