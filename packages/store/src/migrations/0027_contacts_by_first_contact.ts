import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The trust index of a number (NumberStates.trustCounts, recomputed every five minutes while the
 * number works, and for every number at once after a restart) counts the people first contacted
 * in its last 14 days. Contacts are never deleted (they are the address book), and the only index
 * by number was (number_id, phone), so each count read every contact the number ever had: 320,000
 * rows for the 10,000 of the last 14 days of a number with a year of cold sends behind it, 190-230
 * ms; through this index, those 10,000 (6 ms). See docs/performance.md "The trust index of a
 * number with a long history". One more index entry per new contact; the updates each message
 * makes to its contact (last_contact_at, first_in_at, first_out_at) do not touch
 * first_contact_at, so they stay HOT.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX IF NOT EXISTS contacts_first_contact ON contacts (number_id, first_contact_at)`
})
