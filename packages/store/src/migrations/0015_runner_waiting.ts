import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A runner's report says whether it is still waiting, at a cold start, for the runners it needs
 * before it takes shards (CLUSTER_MIN_RUNNERS): so the cluster view explains why its shards are
 * unassigned meanwhile. Null once it takes shards (and in the reports of older versions).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runner_stats ADD COLUMN waiting_for integer`
})
