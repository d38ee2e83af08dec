import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * What webhook delivery needs beyond the outbox of 0001: a resent event is a copy at the tail of
 * the account's queue that keeps the id of the event it repeats (so its `webhook-id` stays the
 * same), and an endpoint the gateway disabled carries a notice for the account to read.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_outbox ADD COLUMN resend_of bigint REFERENCES webhook_outbox (id)`
  yield* sql`ALTER TABLE webhook_endpoints ADD COLUMN notice text`
  // The delivery log of one event, attempt by attempt.
  yield* sql`CREATE INDEX webhook_deliveries_outbox ON webhook_deliveries (outbox_id, attempt)`
})
