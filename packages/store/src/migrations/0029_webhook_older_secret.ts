import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A second earlier webhook secret: a rotation made while the previous one still signs (within its
 * 24 hours) keeps that one signing too, until its own 24 hours are over, instead of dropping it
 * for the secret the rotation replaces. A receiver that still holds the first secret then keeps
 * verifying through a second rotation (a retried or doubled call). Sealed as the others are.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE webhook_endpoints
      ADD COLUMN older_secret text,
      ADD COLUMN older_secret_until timestamptz,
      ADD CONSTRAINT webhook_older_secret_sealed CHECK (older_secret IS NULL OR older_secret LIKE 'enc:v1:%')`
})
