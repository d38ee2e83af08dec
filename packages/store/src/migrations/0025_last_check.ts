/**
 * `daily_usage.last_check_at`: when the number's last contact check of the day was made, so the
 * one-a-second rule of contact checks holds across a restart or a move of the number, as the
 * day's count of checks already did.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE daily_usage ADD COLUMN last_check_at timestamptz`
})
