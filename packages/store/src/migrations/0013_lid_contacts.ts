import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A person WhatsApp names only by a LID (no phone known yet) is a contact without a phone:
 * `contacts.phone` becomes nullable, such a contact is unique by its LID, and a phone stays
 * unique per number. Rows written before, where the LID's digits were taken for a phone, are
 * put right: their `peer` is empty (messages and chats) and the contact has no phone.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE contacts DROP CONSTRAINT contacts_pkey`
  yield* sql`ALTER TABLE contacts ALTER COLUMN phone DROP NOT NULL`
  yield* sql`ALTER TABLE contacts ADD CONSTRAINT contacts_person CHECK (phone IS NOT NULL OR lid IS NOT NULL)`
  // NULLs are distinct: every LID-only contact passes this one, and `ON CONFLICT (number_id, phone)` still works.
  yield* sql`CREATE UNIQUE INDEX contacts_phone ON contacts (number_id, phone)`
  yield* sql`CREATE UNIQUE INDEX contacts_lid_only ON contacts (number_id, lid) WHERE phone IS NULL`
  yield* sql`UPDATE messages SET peer = '' WHERE NOT is_group AND peer_lid IS NOT NULL AND peer_lid = peer || '@lid'`
  yield* sql`UPDATE chats SET peer = '' WHERE NOT is_group AND peer_lid IS NOT NULL AND peer_lid = peer || '@lid'`
  yield* sql`UPDATE contacts SET phone = NULL WHERE lid IS NOT NULL AND lid = phone || '@lid'`
})
