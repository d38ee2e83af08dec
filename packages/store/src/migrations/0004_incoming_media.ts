import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Incoming files go into the blob store in the background: a message whose file is still being
 * downloaded is `media_pending`, and an entity that starts finds those a lost runner left behind.
 * A restriction by the network keeps its own reason, which connection changes do not overwrite
 * (`status_reason` follows the connection).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX messages_media_pending ON messages (number_id, id) WHERE media_pending`
  yield* sql`ALTER TABLE numbers ADD COLUMN restriction_reason text`
})
