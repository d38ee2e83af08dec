import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * History downloads (GET /export) are limited per account over a sliding 10 minutes: each one
 * leaves a row here. Archive exports are counted per Almaty day by `created_at`, and the
 * background job finds expired archives by `expires_at`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE history_downloads (
      account_id bigint NOT NULL REFERENCES accounts (id),
      at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX history_downloads_account ON history_downloads (account_id, at)`
  yield* sql`CREATE INDEX exports_account_created ON exports (account_id, created_at)`
  yield* sql`CREATE INDEX exports_expiring ON exports (expires_at) WHERE status = 'done'`
})
