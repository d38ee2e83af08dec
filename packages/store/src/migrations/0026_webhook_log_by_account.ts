import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The delivery log of each account, newest first: what `GET /webhook/deliveries` (unfiltered and
 * `status=delivered`) pages through. Read through the primary key backwards, a page of a quiet
 * account came only after every newer event of the other accounts had been read: with thirty days
 * of a busy gateway's events in the table, seconds, and past the statement timeout on a larger one
 * (1.1 s with two million newer events, docs/performance.md "The webhook log of a quiet account").
 * One more index entry an event, written with it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX IF NOT EXISTS webhook_outbox_account_id ON webhook_outbox (account_id, id)`
})
