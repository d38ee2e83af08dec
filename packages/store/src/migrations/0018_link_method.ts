import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * How the number's last link was started: `qr` or `code` (a pairing code). A link in progress on
 * a runner that stops goes on, on the runner that takes the number, the same way. Null for links
 * started before (they go on by QR).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE numbers ADD COLUMN link_method text CHECK (link_method IN ('qr', 'code'))`
})
