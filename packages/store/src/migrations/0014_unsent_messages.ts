import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * An outgoing message's acks (sent, delivered, read) each update its row. While an index referred
 * to `status` (the pending messages' partial index did), every such update was a new row version
 * in every index of `messages`. The pending index now names `unsent`, a column computed
 * from `status` that changes once (pending to sent), so `delivered` and `read` are heap-only
 * updates that touch no index; the pages keep a fifth free for them.
 *
 * Adding a stored computed column rewrites the table once (docs/operations.md, "Upgrading").
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages SET (fillfactor = 80)`
  yield* sql`ALTER TABLE messages ADD COLUMN unsent boolean GENERATED ALWAYS AS (status = 'pending') STORED`
  yield* sql`CREATE INDEX messages_unsent ON messages (number_id, id) WHERE unsent`
  yield* sql`DROP INDEX messages_pending`
})
