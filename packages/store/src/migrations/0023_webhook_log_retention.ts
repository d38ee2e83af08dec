import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The delivery log's failed events and notices, by account, newest first: what
 * `GET /webhook/deliveries?status=failed|notice` pages through. Only events that failed (and the
 * notices, written failed) enter it, a few of an account's history: an event delivered never
 * does, so the hot path of delivery writes nothing more. Delivered events are most of the log,
 * and the primary key read backwards finds a page of them at once.
 *
 * The resends of each event: the delivery log's retention deletes an event only when no resend
 * still points at it, and PostgreSQL checks each deleted event's `resend_of` references. Only
 * resends enter it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX webhook_outbox_failed ON webhook_outbox (account_id, id) WHERE failed_at IS NOT NULL`
  yield* sql`CREATE INDEX webhook_outbox_resends ON webhook_outbox (resend_of) WHERE resend_of IS NOT NULL`
})
