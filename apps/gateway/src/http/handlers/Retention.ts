import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { Settings } from "../../Config.js"

/** Messages created before this instant are past the retention period and never returned. */
export const retainedSince = Effect.gen(function*() {
  const { messageRetentionDays } = yield* Settings
  const now = yield* Clock.currentTimeMillis
  return messageRetentionDays > 0 ? new Date(now - messageRetentionDays * 86_400_000) : null
})
