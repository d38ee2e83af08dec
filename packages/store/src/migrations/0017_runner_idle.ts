import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A runner's report lists the numbers of its shards that should run and whose entities it has not
 * started yet (taken over, not yet woken): the cluster view counts them as WAKING, not by the
 * status they last stored. Null in the reports of older versions.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runner_stats ADD COLUMN idle integer[]`
})
