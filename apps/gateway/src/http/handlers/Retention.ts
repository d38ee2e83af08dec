import * as DomainClock from "@wagate/domain/DomainClock"
import * as Effect from "effect/Effect"
import { Settings } from "../../Config.js"

/**
 * Messages created before this instant are past the retention period and never returned: by the
 * domain clock, which the message upkeep deletes them by too.
 */
export const retainedSince = Effect.gen(function*() {
  const { messageRetentionDays } = yield* Settings
  const now = yield* DomainClock.now
  return messageRetentionDays > 0 ? new Date(now - messageRetentionDays * 86_400_000) : null
})
