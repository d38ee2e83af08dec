/**
 * Idempotency-Keys live 24 hours (docs/api-decisions.md): a retry after that is a new request.
 * Every process that hosts entities deletes expired keys every hour, in batches, so the table
 * stays the size of a day's keyed sends.
 */
import * as DomainClock from "@wagate/domain/DomainClock"
import { IDEMPOTENCY_TTL_MS } from "@wagate/numbers/NumberSend"
import { Conversations } from "@wagate/store/Conversations"
import * as Effect from "effect/Effect"
import * as Upkeep from "./Upkeep.js"

const BATCH = 5_000

/** Deletes the keys older than the lifetime at `now`; returns how many. */
export const sweep = Effect.gen(function*() {
  const conversations = yield* Conversations
  const before = new Date((yield* DomainClock.now) - IDEMPOTENCY_TTL_MS)
  return yield* Upkeep.inBatches(BATCH, conversations.expireKeys(before, BATCH))
})

export const layer = Upkeep.every("1 hour", "expiring Idempotency-Keys", sweep)
