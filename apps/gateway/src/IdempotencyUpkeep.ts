/**
 * Idempotency-Keys live 24 hours (docs/api-decisions.md): a retry after that is a new request.
 * Every process that hosts entities deletes expired keys every hour, in batches, so the table
 * stays the size of a day's keyed sends.
 */
import * as DomainClock from "@wagate/domain/DomainClock"
import { IDEMPOTENCY_TTL_MS } from "@wagate/numbers/NumberSend"
import { Conversations } from "@wagate/store/Conversations"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"

const BATCH = 5_000

/** Deletes the keys older than the lifetime at `now`; returns how many. */
export const sweep = Effect.gen(function*() {
  const conversations = yield* Conversations
  const before = new Date((yield* DomainClock.now) - IDEMPOTENCY_TTL_MS)
  let total = 0
  while (true) {
    const deleted = yield* conversations.expireKeys(before, BATCH)
    total += deleted
    if (deleted < BATCH) return total
  }
})

export const layer = Layer.scopedDiscard(Effect.forkScoped(Effect.repeat(
  sweep.pipe(Effect.catchAllCause((cause) => Effect.as(Effect.logError("expiring Idempotency-Keys failed", cause), 0))),
  Schedule.spaced("1 hour")
)))
