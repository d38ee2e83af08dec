import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Blobs that may be in the store with no file row to count or remove them: an attachment whose
 * upload timed out can still land once the store answers again. The media upkeep deletes each
 * from `remove_after` on and then forgets it; one it cannot delete is tried again later.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE blob_leftovers (
      blob_key text PRIMARY KEY,
      remove_after timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX blob_leftovers_due ON blob_leftovers (remove_after)`
})
