import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Rows the Baileys driver owns besides the auth state: `wa_sent_messages` keeps the message
 * Baileys built for each send (protobuf bytes), so a recipient device that could not decrypt it
 * gets it again after a reconnect (`getMessage`); `wa_driver_state` keeps the driver's few
 * settings learned at run time (the WhatsApp Web version last fetched).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE wa_sent_messages (
      number_id bigint NOT NULL REFERENCES numbers (id) ON DELETE CASCADE,
      wa_message_id text NOT NULL,
      proto bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (number_id, wa_message_id)
    )`
  yield* sql`CREATE INDEX wa_sent_messages_created ON wa_sent_messages (created_at)`
  yield* sql`
    CREATE TABLE wa_driver_state (
      key text PRIMARY KEY,
      value text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
