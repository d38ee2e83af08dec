import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The message retention deletes old messages (apps/gateway/src/MessageUpkeep.ts), and PostgreSQL
 * checks for each deleted message that no Idempotency-Key still names it: without an index on
 * `message_id` that is a scan of the whole table (a day's keyed sends) per message deleted. The
 * table holds a day of keys, so the index is small and built in moments; `messages` is untouched.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX idempotency_keys_message ON idempotency_keys (message_id)`
})
