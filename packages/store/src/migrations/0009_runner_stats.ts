import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * What each runner reports every few seconds for the operator's cluster view: the shards it
 * owns and how many entities it runs. A row older than a few reports belongs to a runner that
 * is gone.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE runner_stats (
      address text PRIMARY KEY,
      shards integer[] NOT NULL,
      entities integer NOT NULL,
      started_at timestamptz NOT NULL,
      reported_at timestamptz NOT NULL
    )`
})
