import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * What a number entity persists beyond counters: its suspension of first messages, a
 * restriction reported by the network, the last trust index, whether the device is linked, and
 * the hash of first messages for anti-mailing after a restart.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE numbers ADD COLUMN cold_blocked_until timestamptz`
  yield* sql`ALTER TABLE numbers ADD COLUMN restricted_until timestamptz`
  yield* sql`ALTER TABLE numbers ADD COLUMN linked boolean NOT NULL DEFAULT false`
  yield* sql`ALTER TABLE numbers ADD COLUMN status_reason text`
  yield* sql`ALTER TABLE numbers ADD COLUMN trust_rating integer`
  yield* sql`ALTER TABLE messages ADD COLUMN text_hash text`
  // First messages of the last hour, read when an entity starts (anti-mailing, 5-second gap).
  yield* sql`CREATE INDEX messages_first_contacts ON messages (number_id, created_at) WHERE first_contact`
  // Outgoing messages accepted but not yet handed to the network (re-sent after a crash).
  yield* sql`CREATE INDEX messages_pending ON messages (number_id, id) WHERE status = 'pending'`
})
